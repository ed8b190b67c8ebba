//! A real headless browser for the web page's tests: Debian's `chromium`
//! driven through `chromedriver` over WebDriver (plain JSON over HTTP on
//! loopback, with the tests' own HTTP client). Each harness starts its
//! own driver on a port it picks and a fresh browser profile; both are
//! ended when it is dropped. Waiting is for a condition in the page,
//! with a deadline, never for a fixed time.

#![allow(clippy::panic, dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http;

/// How long a condition may take to hold.
const DEADLINE: Duration = Duration::from_secs(60);

/// A browser session.
pub struct Browser {
    /// The driver process.
    driver: Child,
    /// `127.0.0.1:PORT` of the driver.
    addr: String,
    /// The WebDriver session id.
    session: String,
    /// The browser's profile, removed at the end.
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `chromedriver` and a headless Chromium through it.
    pub fn start() -> Self {
        let mut driver = Command::new("chromedriver")
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start chromedriver ({e}); the page's tests need Debian's chromium and \
                     chromium-driver (apt-get install chromium chromium-driver; .ci/run does)"
                )
            });
        let mut lines = BufReader::new(driver.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("chromedriver exited before saying its port"))
                .unwrap();
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest.trim_end_matches('.').to_owned();
            }
        };
        // The rest of its output is not needed; keep the pipe drained.
        std::thread::spawn(move || lines.for_each(drop));
        let addr = format!("127.0.0.1:{port}");
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--window-size=1100,700",
                format!("--user-data-dir={}", profile.path().display()),
            ]},
        }}});
        let reply = http::request(
            &addr,
            "POST",
            "/session",
            &[("Content-Type", "application/json")],
            capabilities.to_string().as_bytes(),
        );
        assert_eq!(reply.status, 200, "no browser session: {}", reply.body);
        let session = reply.json()["value"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        Self {
            driver,
            addr,
            session,
            _profile: profile,
        }
    }

    /// One WebDriver command; its `value`.
    fn command(&self, method: &str, path: &str, body: &Value) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let body = if method == "GET" {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let reply = http::request(
            &self.addr,
            method,
            &path,
            &[("Content-Type", "application/json")],
            &body,
        );
        assert_eq!(reply.status, 200, "{method} {path}: {}", reply.body);
        reply.json()["value"].clone()
    }

    /// Opens `url`.
    pub fn go(&self, url: &str) {
        self.command("POST", "/url", &json!({"url": url}));
    }

    /// Runs `script` (a function body) in the page; what it returns.
    pub fn eval(&self, script: &str) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            &json!({"script": script, "args": []}),
        )
    }

    /// The text `script` returns.
    pub fn text(&self, script: &str) -> String {
        match self.eval(script) {
            Value::String(text) => text,
            other => other.to_string(),
        }
    }

    /// Waits until `script` returns true; `what` names it in a failure,
    /// with the page's text.
    pub fn wait(&self, what: &str, script: &str) {
        let deadline = Instant::now() + DEADLINE;
        while self.eval(script) != Value::Bool(true) {
            if Instant::now() > deadline {
                let page = self.text("return document.body.innerText");
                panic!("{what}: not within {DEADLINE:?}; the page shows:\n{page}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let addr = self.addr.clone();
        let _ = std::panic::catch_unwind(move || http::request(&addr, "DELETE", &path, &[], b""));
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
