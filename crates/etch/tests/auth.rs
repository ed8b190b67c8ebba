//! `etch auth login|status|logout` and runs with a stored ChatGPT/Codex
//! login (E-CLI-10, E-AUTH-02/03/05/07/08, G17), against a fake issuer and
//! a fake Codex backend.

mod support;

use std::os::unix::fs::PermissionsExt;

use etch_test_support::{FakeServer, Reply, responses_text};
use serde_json::json;
use support::Workspace;

/// Base64url without padding, for building a test JWT.
fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// An unsigned JWT whose payload names a ChatGPT account.
fn id_token(account: &str) -> String {
    let payload = json!({"https://api.openai.com/auth": {"chatgpt_account_id": account}});
    format!(
        "{}.{}.sig",
        b64url(br#"{"alg":"none"}"#),
        b64url(payload.to_string().as_bytes())
    )
}

/// The device flow end to end, then status, a run on the Codex backend with
/// the stored token and account header, and logout.
/// Writes the user's `[openai] auth = "login"`: the stored login may go to
/// any base URL (a Codex proxy; here the fake server).
#[allow(clippy::unwrap_used)]
fn allow_login_anywhere(ws: &Workspace) {
    let dir = ws.home.path().join(".etch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "[openai]\nauth = \"login\"\n").unwrap();
}

#[test]
fn login_status_run_logout() {
    let ws = Workspace::new();
    let issuer = FakeServer::start(vec![
        Reply::json(200, &json!({"device_auth_id": "dev-1", "user_code": "ABCD-1234", "interval": "0"})),
        Reply::json(403, &json!({"error": "authorization_pending"})),
        Reply::json(200, &json!({"authorization_code": "code-1", "code_verifier": "verifier-1"})),
        Reply::json(200, &json!({"id_token": id_token("acc_42"), "access_token": "at-secret", "refresh_token": "rt-secret", "expires_in": 3600})),
    ])
    .unwrap();
    let login = support::Run(
        ws.command(&["auth", "login"])
            .env("ETCH_OAUTH_ISSUER", issuer.url())
            .output()
            .unwrap(),
    );
    let out = login.ok();
    assert!(
        out.contains(&format!("open {}/codex/device", issuer.url())) && out.contains("ABCD-1234"),
        "{out}"
    );
    assert!(
        out.contains("Logged in: OpenAI: ChatGPT/Codex subscription (account acc_42)"),
        "{out}"
    );
    assert!(!out.contains("at-secret"));
    let file = ws.home.path().join(".etch/auth/openai.json");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["type"], "openai-codex-oauth");
    assert_eq!(stored["account_id"], "acc_42");
    let requests = issuer.requests();
    assert_eq!(requests[0].path, "/api/accounts/deviceauth/usercode");
    assert_eq!(requests[3].path, "/oauth/token");

    let status = ws.run(&["auth", "status"]).ok();
    assert!(
        status.starts_with("active: OpenAI: ChatGPT/Codex subscription\n"),
        "{status}"
    );
    assert!(
        status.contains("acc_42") && !status.contains("at-secret"),
        "{status}"
    );

    let backend = FakeServer::start(vec![Reply::sse(responses_text("codex says hi"))]).unwrap();
    let base = format!("{}/backend-api/codex", backend.url());
    // The login goes to a server that is not chatgpt.com (here a stand-in
    // for a Codex proxy) only when the user's own config says so.
    allow_login_anywhere(&ws);
    let run = ws.run(&["--base-url", &base, "-p", "hello"]);
    assert_eq!(run.ok(), "codex says hi\n");
    assert!(
        run.stderr().contains("OpenAI: ChatGPT/Codex subscription"),
        "{}",
        run.stderr()
    );
    let r = &backend.requests()[0];
    assert_eq!(r.path, "/backend-api/codex/responses");
    assert_eq!(r.header("authorization"), Some("Bearer at-secret"));
    assert_eq!(r.header("chatgpt-account-id"), Some("acc_42"));
    assert_eq!(r.json()["store"], false);
    for session in ws.session_files() {
        assert!(
            !std::fs::read_to_string(session)
                .unwrap()
                .contains("at-secret")
        );
    }

    assert!(
        ws.run(&["auth", "logout"])
            .ok()
            .starts_with("Logged out: removed ")
    );
    assert!(!file.exists());
    assert!(
        ws.run(&["auth", "logout"])
            .ok()
            .starts_with("No stored login at ")
    );
    let status = ws.run(&["auth", "status"]).ok();
    assert!(status.starts_with("active: none"), "{status}");
}

/// E-AUTH-03/04: an explicit key wins over a stored login, and an env key
/// ranks below it (the status line says which mode is active).
#[test]
fn status_reports_precedence() {
    let ws = Workspace::new();
    let out = support::Run(
        ws.command(&["auth", "status"])
            .env("OPENAI_API_KEY", "sk-x")
            .output()
            .unwrap(),
    )
    .ok();
    assert!(
        out.starts_with("active: OpenAI: Platform API key\n"),
        "{out}"
    );
    let out = support::Run(
        ws.command(&["auth", "status"])
            .env("CODEX_ACCESS_TOKEN", "tok")
            .output()
            .unwrap(),
    )
    .ok();
    assert!(
        out.starts_with("active: OpenAI: Codex access token\n"),
        "{out}"
    );
}

/// E-AUTH-11, P-AUTH-01: an expired stored login is refreshed before the
/// request, the new token is saved (0600) and sent.
#[test]
fn expired_login_is_refreshed_before_the_request() {
    let ws = Workspace::new();
    let dir = ws.home.path().join(".etch/auth");
    std::fs::create_dir_all(&dir).unwrap();
    let stale = json!({"type": "openai-codex-oauth", "access_token": "old-at", "refresh_token": "rt-1", "expires_at": "2020-01-01T00:00:00Z", "account_id": "acc_7"});
    std::fs::write(dir.join("openai.json"), stale.to_string()).unwrap();
    let issuer = FakeServer::start(vec![Reply::json(
        200,
        &json!({"access_token": "new-at", "refresh_token": "rt-2", "expires_in": 3600}),
    )])
    .unwrap();
    let backend = FakeServer::start(vec![Reply::sse(responses_text("fresh"))]).unwrap();
    let base = format!("{}/codex", backend.url());
    allow_login_anywhere(&ws);
    let run = support::Run(
        ws.command(&["--base-url", &base, "-p", "hi"])
            .env("ETCH_OAUTH_ISSUER", issuer.url())
            .output()
            .unwrap(),
    );
    assert_eq!(run.ok(), "fresh\n");
    assert_eq!(issuer.requests()[0].path, "/oauth/token");
    assert_eq!(issuer.requests()[0].json()["refresh_token"], "rt-1");
    assert_eq!(
        backend.requests()[0].header("authorization"),
        Some("Bearer new-at")
    );
    assert_eq!(
        backend.requests()[0].header("chatgpt-account-id"),
        Some("acc_7")
    );
    let saved = std::fs::read_to_string(dir.join("openai.json")).unwrap();
    assert!(saved.contains("new-at") && saved.contains("rt-2"));
    assert_eq!(
        std::fs::metadata(dir.join("openai.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

/// E-CLI-21: `etch auth import codex` shows Codex's account and copies
/// the login (0600) only when told to: refused without a terminal to ask
/// on, taken with `--yes`; a file without a ChatGPT login is refused.
#[test]
#[allow(clippy::unwrap_used)]
fn a_codex_login_is_imported_when_asked() {
    let ws = Workspace::new();
    let codex = tempfile::tempdir().unwrap();
    let access = {
        let payload = json!({"exp": 2_000_000_000_i64});
        format!(
            "{}.{}.sig",
            b64url(br#"{"alg":"none"}"#),
            b64url(payload.to_string().as_bytes())
        )
    };
    let file = json!({"tokens": {"id_token": id_token("acct-codex"), "access_token": access,
        "refresh_token": "rt-codex"}});
    std::fs::write(codex.path().join("auth.json"), file.to_string()).unwrap();
    let run = |args: &[&str]| {
        support::Run(
            ws.command(args)
                .env("CODEX_HOME", codex.path())
                .output()
                .unwrap(),
        )
    };
    let asked = run(&["auth", "import", "codex"]);
    assert_eq!(asked.code(), 2, "{}", asked.stderr());
    assert!(
        asked.stdout().contains("account acct-codex"),
        "{}",
        asked.stdout()
    );
    assert!(asked.stderr().contains("--yes"), "{}", asked.stderr());
    let stored = ws.home.path().join(".etch/auth/openai.json");
    assert!(!stored.exists(), "nothing imported without a yes");
    let out = run(&["auth", "import", "codex", "--yes"]).ok();
    assert!(
        out.contains("Imported: OpenAI: ChatGPT/Codex subscription"),
        "{out}"
    );
    let mode = std::fs::metadata(&stored).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stored).unwrap()).unwrap();
    assert_eq!(saved["refresh_token"], "rt-codex", "{saved}");
    let status = support::Run(ws.command(&["auth", "status"]).output().unwrap()).ok();
    assert!(status.contains("acct-codex"), "{status}");
    std::fs::write(
        codex.path().join("auth.json"),
        r#"{"OPENAI_API_KEY":"sk-1"}"#,
    )
    .unwrap();
    let key_only = run(&["auth", "import", "codex", "--yes"]);
    assert_eq!(key_only.code(), 1);
    assert!(
        key_only.stderr().contains("holds no ChatGPT login"),
        "{}",
        key_only.stderr()
    );
}
