//! The real `etch` binary in a real terminal: a tmux server of its own
//! (one socket per test, so tests run in parallel), keys sent with
//! `send-keys`, the screen and the whole scrollback read with
//! `capture-pane`. Waiting is always for a condition on the screen, with
//! a deadline, never for a fixed time. The server and everything in it
//! is killed when the harness is dropped.

#![allow(clippy::panic, clippy::expect_used, dead_code)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{CREDENTIALS, Workspace};

/// How long a condition may take to show.
const DEADLINE: Duration = Duration::from_secs(60);

/// A tmux server running etch.
pub struct Tmux {
    /// The server's socket.
    socket: PathBuf,
    /// Keeps the socket's directory.
    dir: tempfile::TempDir,
}

impl Tmux {
    /// Starts etch with `args` in `ws` on a `width` x `height` terminal.
    /// When etch exits, the pane shows `[etch exited CODE]` and stays.
    pub fn start(
        ws: &Workspace,
        args: &[&str],
        env: &[(&str, &str)],
        width: u16,
        height: u16,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let binary = std::env::var_os("ETCH_TEST_BINARY")
            .filter(|b| !b.is_empty())
            .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_etch")), PathBuf::from);
        let mut script = String::from("cd \"$ETCH_TEST_DIR\" || exit 1\n");
        for var in CREDENTIALS {
            let _ = writeln!(script, "unset {var}");
        }
        script.push_str("unset ETCH_ECHO_DELAY_MS ETCH_IDLE_TIMEOUT_SECS HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy NO_COLOR\n");
        script.push_str(
            "export NO_PROXY=127.0.0.1,localhost ETCH_RETRY_BASE_DELAY_MS=10 TERM=tmux-256color\n",
        );
        for (key, value) in env {
            let _ = writeln!(script, "export {key}={}", shell_quote(value));
        }
        script.push_str(&shell_quote(&binary.to_string_lossy()));
        for arg in args {
            script.push(' ');
            script.push_str(&shell_quote(arg));
        }
        script.push_str("\necho \"[etch exited $?]\"\nexec sleep 3600\n");
        let script_path = dir.path().join("run.sh");
        std::fs::write(&script_path, script).unwrap();
        let config = dir.path().join("tmux.conf");
        std::fs::write(
            &config,
            "set -g escape-time 0\nset -g history-limit 50000\nset -g status off\n",
        )
        .unwrap();
        let tmux = Self { socket, dir };
        let status = tmux
            .cmd()
            .args(["-f"])
            .arg(&config)
            .args([
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .arg(format!("bash {}", script_path.display()))
            .env("HOME", ws.home.path())
            .env("ETCH_TEST_DIR", ws.path())
            .status()
            .expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        tmux
    }

    /// A tmux command on this server.
    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    /// Sends keys by tmux name (`Enter`, `Escape`, `C-d`, `Up`).
    pub fn keys(&self, keys: &[&str]) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "t", "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types `text` and presses Enter.
    pub fn line(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// Pastes `text` as a bracketed paste.
    pub fn paste(&self, text: &str) {
        let file = self.dir.path().join("paste.txt");
        std::fs::write(&file, text).unwrap();
        let status = self
            .cmd()
            .args(["load-buffer", "-b", "p"])
            .arg(&file)
            .status()
            .unwrap();
        assert!(status.success());
        let status = self
            .cmd()
            .args(["paste-buffer", "-p", "-b", "p", "-t", "t"])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.capture(&["-p"])
    }

    /// Scrollback and screen, top to bottom, trailing blank rows dropped.
    pub fn history(&self) -> String {
        let text = self.capture(&["-p", "-S", "-", "-E", "-"]);
        text.trim_end().to_owned()
    }

    /// `capture-pane` with `args`.
    fn capture(&self, args: &[&str]) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-t", "t"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pid of etch (the child of the pane's shell).
    pub fn etch_pid(&self) -> u32 {
        let out = self
            .cmd()
            .args(["list-panes", "-t", "t", "-F", "#{pane_pid}"])
            .output()
            .unwrap();
        let shell = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        children
            .split_whitespace()
            .next()
            .expect("etch runs in the pane")
            .parse()
            .unwrap()
    }

    /// The terminal's cursor: whether it is shown, its column and row.
    pub fn cursor(&self) -> (bool, u16, u16) {
        let out = self
            .cmd()
            .args([
                "display-message",
                "-p",
                "-t",
                "t",
                "#{cursor_flag} #{cursor_x} #{cursor_y}",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let fields: Vec<u16> = text
            .split_whitespace()
            .map(|f| f.parse().unwrap())
            .collect();
        assert_eq!(fields.len(), 3, "{text:?}");
        (fields[0] == 1, fields[1], fields[2])
    }

    /// Waits until the cursor is shown at (`x`, the last row of the
    /// screen that starts with `row_start`, trailing blanks aside);
    /// returns the screen.
    pub fn wait_cursor(&self, row_start: &str, x: u16) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            let cursor = self.cursor();
            let row = screen
                .lines()
                .collect::<Vec<_>>()
                .iter()
                .rposition(|l| l.starts_with(row_start.trim_end()))
                .and_then(|r| u16::try_from(r).ok());
            if row.is_some_and(|row| cursor == (true, x, row)) && self.screen() == screen {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for the cursor at column {x} of the row \
                 {row_start:?} (it is at {cursor:?}) on screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Kills the tmux server: the terminal goes away under etch (SIGHUP).
    pub fn close_terminal(&self) {
        let _ = self
            .cmd()
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
    }

    /// Resizes the terminal.
    pub fn resize(&self, width: u16, height: u16) {
        let status = self
            .cmd()
            .args([
                "resize-window",
                "-t",
                "t",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits until the whole history satisfies `ready`; returns it.
    pub fn wait(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let history = self.history();
            if ready(&history) {
                return history;
            }
            assert!(
                !history.contains("[etch exited "),
                "etch exited while waiting for {what}; the terminal shows:\n{history}"
            );
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the terminal shows:\n{history}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Waits until the history contains `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait(&format!("{text:?}"), |h| h.contains(text))
    }

    /// Waits until the visible screen contains `text` (the live area).
    pub fn wait_screen(&self, text: &str) -> String {
        self.wait_screen_all(&[text])
    }

    /// Waits until the visible screen contains every one of `texts`.
    pub fn wait_screen_all(&self, texts: &[&str]) -> String {
        let text = texts.join(" and ");
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            assert!(
                !screen.contains("[etch exited "),
                "etch exited while waiting for {text:?}; the screen shows:\n{screen}"
            );
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {text:?} on screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Presses Escape and waits until `shown` has left the screen.
    ///
    /// A key sent right after Escape can reach etch in the same read,
    /// and a terminal reads ESC followed by a key as that key with Alt
    /// held; waiting keeps the two apart.
    pub fn escape_from(&self, shown: &str) {
        self.keys(&["Escape"]);
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if !screen.contains(shown) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {shown:?} to leave the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Waits for etch to exit; returns its exit code.
    pub fn exit_code(&self) -> i32 {
        let history = self.wait("etch to exit", |h| h.contains("[etch exited "));
        let at = history.rfind("[etch exited ").unwrap() + "[etch exited ".len();
        history[at..].split(']').next().unwrap().parse().unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self
            .cmd()
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// `text` quoted for bash.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
