//! A running `etch serve` in a workspace, and plain HTTP calls on it.

#![allow(clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use serde_json::Value;

use super::Workspace;
use super::http::{self, Events, Reply as HttpReply};

/// A running `etch serve`, killed when dropped.
pub struct Serve {
    /// The process.
    pub child: Child,
    /// `host:port`.
    pub addr: String,
    /// The token.
    pub token: String,
    /// Where the 9P tree listens (`HOST:PORT` or `unix:PATH`), with
    /// `--9p`.
    pub ninep: Option<String>,
}

impl Serve {
    /// Starts `etch serve --listen 127.0.0.1:0 --json` with `args` in `ws`
    /// and reads its listening line.
    pub fn start(ws: &Workspace, args: &[&str]) -> Self {
        Self::start_at(ws, "127.0.0.1:0", args)
    }

    /// [`Self::start`] listening on `listen`.
    pub fn start_at(ws: &Workspace, listen: &str, args: &[&str]) -> Self {
        let mut all = vec!["serve", "--listen", listen, "--json"];
        all.extend_from_slice(args);
        let mut child = ws
            .command(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let listening: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert_eq!(listening["type"], "listening");
        let url = listening["url"].as_str().unwrap();
        Self {
            addr: url.trim_start_matches("http://").to_owned(),
            token: listening["token"].as_str().unwrap().to_owned(),
            ninep: listening["ninep"].as_str().map(str::to_owned),
            child,
        }
    }

    /// The authorization header.
    pub fn auth(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A request with the token.
    pub fn call(&self, method: &str, path: &str, body: &str) -> HttpReply {
        let auth = self.auth();
        http::request(
            &self.addr,
            method,
            path,
            &[("Authorization", &auth)],
            body.as_bytes(),
        )
    }

    /// `POST /v1/sessions/ID/prompt` with `body`.
    pub fn prompt(&self, id: &str, body: &str) -> HttpReply {
        self.call("POST", &format!("/v1/sessions/{id}/prompt"), body)
    }

    /// `POST /v1/sessions/ID/commands` with `body`.
    pub fn command(&self, id: &str, body: &str) -> HttpReply {
        self.call("POST", &format!("/v1/sessions/{id}/commands"), body)
    }

    /// Creates a session; its id.
    pub fn create(&self) -> String {
        let reply = self.call("POST", "/v1/sessions", "{}");
        assert_eq!(reply.status, 201, "{}", reply.body);
        reply.json()["id"].as_str().unwrap().to_owned()
    }

    /// The session's event stream, from `last` when given.
    pub fn events(&self, id: &str, last: Option<&str>) -> Events {
        let auth = self.auth();
        let mut headers = vec![("Authorization", auth.as_str())];
        if let Some(last) = last {
            headers.push(("Last-Event-ID", last));
        }
        let events = Events::open(&self.addr, &format!("/v1/sessions/{id}/events"), &headers);
        assert_eq!(events.status, 200);
        events
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
