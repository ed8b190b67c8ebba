//! Listing the models an endpoint offers, for a front end's model picker:
//! `GET {base_url}/models` on OpenAI-compatible servers (OpenAI,
//! OpenRouter, llama.cpp, vLLM, Ollama) and `GET {base_url}/v1/models` on
//! Anthropic's; both answer `{"data": [{"id": "…"}, …]}`.
//!
//! The answer is outside input like a stream: the whole exchange is
//! bounded in time ([`LIST_TIMEOUT`]), the body in size, the list in
//! length, and a name that is empty, long or not plain printable text is
//! left out (it would be shown in the terminal and sent back as a model
//! name). This module must not know who shows the list.

use std::time::Duration;

use etch_model::{ErrorKind, ModelError};
use serde::Deserialize;

use crate::http;

/// How long listing may take, connection included: a picker waits for
/// it, so a dead server must not hold it long.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest body read: OpenRouter's list, with descriptions and
/// prices for some 400 models, is about 1.5 MB.
const MAX_BODY: usize = 8 << 20;

/// The most names kept.
pub const MAX_MODELS: usize = 1000;

/// The longest name kept, in bytes.
const MAX_NAME: usize = 200;

/// The list's shape; everything else in it is ignored.
#[derive(Deserialize)]
struct List {
    /// The models.
    data: Vec<Entry>,
}

/// One model.
#[derive(Deserialize)]
struct Entry {
    /// Its name, as requests send it.
    id: String,
}

/// The model names at `url`, asked with `headers` (credentials included),
/// within [`LIST_TIMEOUT`].
pub async fn list(url: &str, headers: &[(String, String)]) -> Result<Vec<String>, ModelError> {
    list_within(url, headers, LIST_TIMEOUT).await
}

/// [`list`] with another time limit.
pub async fn list_within(
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<Vec<String>, ModelError> {
    match tokio::time::timeout(timeout, fetch(url, headers)).await {
        Ok(result) => result,
        Err(_) => Err(ModelError::new(
            ErrorKind::Transient,
            format!(
                "{url} did not list its models within {}s",
                timeout.as_secs_f32()
            ),
        )),
    }
}

/// The request and the bounded read of its answer.
async fn fetch(url: &str, headers: &[(String, String)]) -> Result<Vec<String>, ModelError> {
    let mut request = http::client_for(url)?.get(url);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| http::transport_error(url, &e))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| http::transport_error(url, &e))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ModelError::new(
                ErrorKind::Protocol,
                format!(
                    "{url} answered with more than {} MiB; not a model list",
                    MAX_BODY >> 20
                ),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        let kind = match status.as_u16() {
            401 | 403 => ErrorKind::Auth,
            429 | 500..=599 => ErrorKind::Transient,
            _ => ErrorKind::InvalidRequest,
        };
        return Err(ModelError::new(
            kind,
            format!("{url} answered HTTP {status}: {}", http::quote(&text)),
        ));
    }
    parse(&text).ok_or_else(|| {
        ModelError::new(
            ErrorKind::Protocol,
            format!(
                "{url} did not answer with a model list (\"data\": [{{\"id\": …}}]): {}",
                http::quote(&text)
            ),
        )
    })
}

/// The names in a list body, in the server's order, without repeats or
/// names unfit to show; `None` when the body is not a list.
fn parse(text: &str) -> Option<Vec<String>> {
    let list: List = serde_json::from_str(text).ok()?;
    let mut out: Vec<String> = Vec::new();
    for Entry { id } in list.data {
        let fit = !id.is_empty()
            && id.len() <= MAX_NAME
            && !id
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || is_format(c));
        if fit && !out.contains(&id) {
            out.push(id);
            if out.len() == MAX_MODELS {
                break;
            }
        }
    }
    Some(out)
}

/// Invisible characters that reorder or hide text (bidirectional
/// controls, zero-width joiners and marks): a name holding one could show
/// as another.
fn is_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use etch_test_support::{FakeServer, Reply};
    use serde_json::json;

    use super::*;

    #[test]
    fn names_are_kept_in_order_and_unfit_ones_left_out() {
        let body = json!({"object": "list", "data": [
            {"id": "qwen3-coder", "object": "model"},
            {"id": "gpt-5.5"},
            {"id": "qwen3-coder"},
            {"id": ""},
            {"id": "evil\u{1b}[2J"},
            {"id": "spoof\u{202e}fdp"},
            {"id": "has space"},
            {"id": "x".repeat(201)},
        ]});
        assert_eq!(
            parse(&body.to_string()).unwrap(),
            ["qwen3-coder", "gpt-5.5"]
        );
        assert!(parse("{\"models\": []}").is_none());
        assert!(parse("<html>").is_none());
        let many: Vec<_> = (0..MAX_MODELS + 5)
            .map(|i| json!({"id": format!("m{i}")}))
            .collect();
        let parsed = parse(&json!({"data": many}).to_string()).unwrap();
        assert_eq!(parsed.len(), MAX_MODELS);
    }

    #[tokio::test]
    async fn lists_what_the_server_offers_with_the_credentials() {
        let server = FakeServer::start(vec![Reply::json(
            200,
            &json!({"data": [{"id": "m1"}, {"id": "m2"}]}),
        )])
        .unwrap();
        let url = format!("{}/v1/models", server.url());
        let headers = [("authorization".to_owned(), "Bearer k".to_owned())];
        assert_eq!(list(&url, &headers).await.unwrap(), ["m1", "m2"]);
        let requests = server.requests();
        assert_eq!(requests[0].method, "GET");
        assert_eq!(requests[0].path, "/v1/models");
        assert_eq!(requests[0].header("authorization"), Some("Bearer k"));
    }

    #[tokio::test]
    async fn failures_say_what_and_where() {
        let server = FakeServer::start(vec![
            Reply::json(401, &json!({"error": {"message": "bad key"}})),
            Reply::text(200, "not json"),
            Reply::Hang(Duration::from_secs(30)),
        ])
        .unwrap();
        let url = format!("{}/models", server.url());
        let err = list(&url, &[]).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Auth);
        assert!(err.message.contains("HTTP 401"), "{err}");
        assert!(err.message.contains("bad key"), "{err}");
        let err = list(&url, &[]).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(err.message.contains("not json"), "{err}");
        let err = list_within(&url, &[], Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(err.message.contains("did not list its models"), "{err}");
    }

    #[tokio::test]
    async fn a_huge_answer_is_refused() {
        let server = FakeServer::start(vec![Reply::text(200, "x".repeat(MAX_BODY + 1))]).unwrap();
        let url = format!("{}/models", server.url());
        let err = list(&url, &[]).await.unwrap_err();
        assert!(err.message.contains("more than 8 MiB"), "{err}");
    }
}
