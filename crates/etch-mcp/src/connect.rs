//! Reaching one MCP server with rmcp: a child process over stdio, or a
//! streamable HTTP endpoint (headers with `${VAR}` taken from the
//! environment, a bearer token from a named variable). Every failure is
//! a sentence for the user; the caller prefixes the server's name.
//!
//! The child is spawned here rather than by rmcp so that what went
//! wrong can be said: its stderr is forwarded to the bridge's with the
//! last line kept, its stdout passes through a filter that keeps the
//! first line that is not JSON (rmcp skips such lines silently, and a
//! server logging to stdout would otherwise look like one that never
//! answers), and its exit status is at hand.
//!
//! This module must not know the plugin protocol or tool names.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::ClientInitializeError;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::spec::{ServerSpec, Transport};

/// A connected, initialized server.
pub type Service = RunningService<RoleClient, ClientConfig>;

/// What a stdio server let slip: its last stderr line, the first line
/// it wrote to stdout that was not JSON, and the process itself (killed
/// when this is dropped).
#[derive(Clone, Default)]
pub struct Traces(Arc<Mutex<Slips>>, Arc<tokio::sync::watch::Sender<bool>>);

/// The parts of [`Traces`].
#[derive(Default)]
struct Slips {
    /// Last non-empty stderr line.
    stderr: Option<String>,
    /// First stdout line that was not JSON.
    garbage: Option<String>,
    /// The server process.
    child: Option<tokio::process::Child>,
}

impl Traces {
    /// `why` with how the process exited, what it wrote to stdout that
    /// was not MCP and its last stderr line, when there are such things.
    pub fn explain(&self, why: String) -> String {
        let Ok(mut slips) = self.0.lock() else {
            return why;
        };
        let mut out = why;
        if let Some(status) = slips
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            out = format!("{out}; it exited with {status}");
        }
        if let Some(line) = &slips.garbage {
            out = format!(
                "{out}; it wrote {line:?} to stdout, which carries MCP (a server must log to stderr)"
            );
        }
        if let Some(line) = &slips.stderr {
            out = format!("{out}; its last stderr line: {line}");
        }
        out
    }

    /// Gives an exiting server a moment to be reaped and its stderr a
    /// moment to be read to the end, so that [`Self::explain`] can say
    /// how it exited and what it said last.
    pub async fn reap(&self) {
        let child = self.0.lock().ok().and_then(|mut s| s.child.take());
        let grace = std::time::Duration::from_millis(200);
        if let Some(mut child) = child {
            let _ = tokio::time::timeout(grace, child.wait()).await;
            if let Ok(mut slips) = self.0.lock() {
                slips.child = Some(child);
            }
        }
        // Its last words are read once its stderr is at EOF.
        let mut done = self.1.subscribe();
        let _ = tokio::time::timeout(grace, done.wait_for(|d| *d)).await;
    }

    /// Kills the server process, if there is one.
    pub fn kill(&self) {
        if let Ok(mut slips) = self.0.lock()
            && let Some(child) = slips.child.as_mut()
        {
            let _ = child.start_kill();
        }
    }
}

/// Connects to the server and runs MCP's `initialize`.
pub async fn connect(spec: &ServerSpec, tail: &Traces) -> Result<Service, String> {
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("etch", env!("CARGO_PKG_VERSION")),
    );
    match &spec.transport {
        Transport::Stdio { command, args } => {
            let mut child = tokio::process::Command::new(command)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| spawn_error(command, &e))?;
            let (Some(stdin), Some(stdout), Some(stderr)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                return Err(format!("could not open the pipes of {command}"));
            };
            if let Ok(mut slips) = tail.0.lock() {
                slips.child = Some(child);
            }
            tokio::spawn(forward_stderr(stderr, tail.clone()));
            let (filtered, sink) = tokio::io::duplex(1 << 16);
            tokio::spawn(filter_stdout(stdout, sink, tail.clone()));
            match client.serve((filtered, stdin)).await {
                Ok(service) => Ok(service),
                Err(err) => {
                    tail.reap().await;
                    Err(tail.explain(format!(
                        "{command} did not complete MCP initialize: {}",
                        init_error(&err.to_string())
                    )))
                }
            }
        }
        Transport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            // reqwest is built without a default TLS provider (etch
            // picks ring once for the process).
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(header_map(headers)?);
            if !bearer_token_env.is_empty() {
                let token = lookup(bearer_token_env).map_err(|()| {
                    format!(
                        "bearer_token_env names {bearer_token_env}, {}",
                        unset(bearer_token_env)
                    )
                })?;
                config = config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            client
                .serve(transport)
                .await
                .map_err(|e| format!("{url}: {}", http_init_error(&e)))
        }
    }
}

/// Why `command` could not be started.
fn spawn_error(command: &str, err: &std::io::Error) -> String {
    if err.kind() == std::io::ErrorKind::NotFound {
        format!(
            "could not start {command}: no such program (is it installed, and on PATH or given with its full path?)"
        )
    } else {
        format!("could not start {command}: {err}")
    }
}

/// A plainer word for rmcp's initialize errors.
fn init_error(text: &str) -> String {
    if text.starts_with("connection closed") {
        "it closed the connection (exited, or wrote something other than MCP to stdout)".to_owned()
    } else {
        text.to_owned()
    }
}

/// Why an HTTP server could not be initialized, saying what to do
/// about the statuses a user can fix.
fn http_init_error(err: &ClientInitializeError) -> String {
    if err.auth_challenge().is_some() {
        return UNAUTHORIZED.to_owned();
    }
    http_status(&err.to_string())
}

/// What a 401 means for the user.
const UNAUTHORIZED: &str = "the server refused etch (401 Unauthorized): set bearer_token_env to a variable holding a token, or an Authorization header with ${VAR}";

/// A failed request to a server, in plain words: for an HTTP server the
/// statuses a user can fix, else rmcp's own words without its type
/// names.
pub fn service_error(transport: &Transport, err: &ServiceError) -> String {
    let text = err.to_string();
    match transport {
        Transport::Http { .. } => http_status(&text),
        Transport::Stdio { .. } => plain(&text),
    }
}

/// rmcp's text for an HTTP failure, with the status it reports (as
/// `HTTP <code>`) explained.
fn http_status(text: &str) -> String {
    if text.contains("HTTP 401") || text.contains("Auth required") {
        UNAUTHORIZED.to_owned()
    } else if text.contains("HTTP 403") {
        "the server refused etch (403 Forbidden): the token lacks access".to_owned()
    } else if text.contains("HTTP 404") {
        "no MCP endpoint there (404 Not Found): check url".to_owned()
    } else {
        plain(text)
    }
}

/// rmcp's words without its type names: "Send message error Transport
/// [rmcp::…<…>] error: what, when doing" becomes "what (doing)".
fn plain(text: &str) -> String {
    let what = text.rsplit_once("] error: ").map_or(text, |(_, what)| what);
    match what.rsplit_once(", when ") {
        Some((what, when)) => format!("{what} ({when})"),
        None => what.to_owned(),
    }
}

/// The `Name: value` headers with `${VAR}` expanded.
fn header_map(headers: &[String]) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut map = HashMap::new();
    for line in headers {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("header {line:?} is not \"Name: value\""));
        };
        let value = expand(value.trim())?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("header {:?} has an invalid name", name.trim()))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| format!("header {name}'s value holds characters HTTP does not allow"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// The value of variable `name`; `Err` when it is not set or is a model
/// credential, which no MCP server gets, even should the bridge have it.
fn lookup(name: &str) -> Result<String, ()> {
    if etch_secrets::CREDENTIAL_ENV_VARS.contains(&name) {
        return Err(());
    }
    std::env::var(name).map_err(|_| ())
}

/// Why [`lookup`] found no value for `name`, as the end of a sentence
/// naming it.
fn unset(name: &str) -> &'static str {
    if etch_secrets::CREDENTIAL_ENV_VARS.contains(&name) {
        "a model credential, which etch never gives to an MCP server; give the server a token \
         of its own in another variable"
    } else {
        "which is not set in etch's environment"
    }
}

/// `text` with each `${VAR}` replaced by the variable's value.
fn expand(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("{text:?} has an unclosed ${{"));
        };
        let name = &after[..end];
        let value =
            lookup(name).map_err(|()| format!("a header uses ${{{name}}}, {}", unset(name)))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Copies a server's stderr to the bridge's, keeping the last line.
async fn forward_stderr(stderr: tokio::process::ChildStderr, tail: Traces) {
    let mut lines = BufReader::new(stderr).lines();
    let mut out = tokio::io::stderr();
    while let Ok(Some(line)) = lines.next_line().await {
        let _ = out.write_all(line.as_bytes()).await;
        let _ = out.write_all(b"\n").await;
        if !line.trim().is_empty()
            && let Ok(mut slips) = tail.0.lock()
        {
            slips.stderr = Some(line.trim().chars().take(300).collect());
        }
    }
    tail.1.send_replace(true);
}

/// Passes a server's stdout on to rmcp, noting the first line that is
/// not JSON.
async fn filter_stdout(
    stdout: tokio::process::ChildStdout,
    mut sink: tokio::io::DuplexStream,
    tail: Traces,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if !text.is_empty()
            && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
            && let Ok(mut slips) = tail.0.lock()
            && slips.garbage.is_none()
        {
            slips.garbage = Some(text.chars().take(120).collect());
        }
        if sink.write_all(&line).await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_expand_variables() {
        // PATH is set wherever tests run.
        let path = std::env::var("PATH").unwrap_or_default();
        let map = header_map(&["X-Path: a ${PATH} b".to_owned()]);
        let map = map.unwrap_or_default();
        assert_eq!(
            map.get(&HeaderName::from_static("x-path"))
                .and_then(|v| v.to_str().ok()),
            Some(format!("a {path} b").as_str())
        );
        assert!(header_map(&["nocolon".to_owned()]).is_err());
        let missing = header_map(&["A: ${ETCH_TEST_SURELY_UNSET_VAR}".to_owned()]);
        assert!(missing.is_err_and(
            |e| e.contains("ETCH_TEST_SURELY_UNSET_VAR") && e.contains("which is not set")
        ));
    }

    /// A model credential in a header is refused, set or not, and the
    /// message says it was refused rather than missing.
    #[test]
    fn model_credentials_are_refused_not_missing() {
        for name in etch_secrets::CREDENTIAL_ENV_VARS {
            let err = header_map(&[format!("Authorization: Bearer ${{{name}}}")]).unwrap_err();
            assert!(
                err.contains("a model credential, which etch never gives to an MCP server")
                    && !err.contains("not set"),
                "{err}"
            );
        }
    }

    #[test]
    fn http_statuses_say_what_to_do() {
        assert!(http_status("error: Auth required, when x").contains("bearer_token_env"));
        assert!(
            http_status("unexpected server response: HTTP 404 Not Found").contains("check url")
        );
        // A port or a line number is not a status.
        assert_eq!(
            http_status("connection refused for url (http://127.0.0.1:4010/mcp)"),
            "connection refused for url (http://127.0.0.1:4010/mcp)"
        );
        assert_eq!(
            plain("Send message error Transport [a::B<c::D>] error: it broke, when send x"),
            "it broke (send x)"
        );
    }
}
