//! Tests of the device flow and refresh against the scripted fake server.

use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use etch_test_support::{FakeServer, Reply};
use serde_json::json;

use super::*;
use crate::jwt::tests::make_jwt;

/// Options that poll without delay so tests run fast.
fn fast() -> LoginOptions {
    LoginOptions {
        timeout: Duration::from_secs(10),
        poll_interval: Some(Duration::from_millis(10)),
    }
}

/// An id token carrying account id `acct-7`.
fn id_token() -> String {
    make_jwt(&json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-7"}}))
}

/// Decodes a form body into pairs, for assertions.
fn form_pairs(body: &str) -> Vec<(String, String)> {
    body.split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            let decode = |s: &str| {
                let bytes = s.as_bytes();
                let mut out = Vec::new();
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i] == b'%' {
                        out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                        i += 3;
                    } else {
                        out.push(bytes[i]);
                        i += 1;
                    }
                }
                String::from_utf8(out).unwrap()
            };
            (decode(k), decode(v))
        })
        .collect()
}

/// Credentials that expired a minute ago.
fn expired() -> OAuthCredentials {
    OAuthCredentials {
        access_token: Secret::new("old-access"),
        refresh_token: Secret::new("old-refresh"),
        id_token: None,
        expires_at: Utc::now() - chrono::Duration::minutes(1),
        account_id: Some("acct-old".to_owned()),
    }
}

/// The whole flow: user code, two pending polls (403, 404), approval, code
/// exchange; the requests carry exactly the Codex wire shapes.
#[tokio::test]
async fn full_login_flow() {
    let server = FakeServer::start(vec![
        Reply::json(
            200,
            &json!({"device_auth_id": "dev-1", "usercode": "ABCD-EFGH", "interval": "5"}),
        ),
        Reply::json(403, &json!({"error": "authorization_pending"})),
        Reply::json(404, &json!({"error": "authorization_pending"})),
        Reply::json(
            200,
            &json!({"authorization_code": "code-1", "code_verifier": "ver-1"}),
        ),
        Reply::json(
            200,
            &json!({
                "id_token": id_token(),
                "access_token": "acc-1",
                "refresh_token": "ref-1",
                "expires_in": 3600
            }),
        ),
    ])
    .unwrap();
    let issuer = server.url();
    let shown = Mutex::new(None);
    let before = Utc::now();
    let creds = login(&issuer, &fast(), |code| {
        *shown.lock().unwrap() = Some(code.clone());
    })
    .await
    .unwrap();

    let shown = shown.into_inner().unwrap().unwrap();
    assert_eq!(shown.verification_url, format!("{issuer}/codex/device"));
    assert_eq!(shown.user_code, "ABCD-EFGH");
    assert_eq!(creds.access_token.expose(), "acc-1");
    assert_eq!(creds.refresh_token.expose(), "ref-1");
    assert_eq!(creds.id_token.as_ref().unwrap().expose(), id_token());
    assert_eq!(creds.account_id.as_deref(), Some("acct-7"));
    let lifetime = creds.expires_at - before;
    assert!(lifetime <= chrono::Duration::seconds(3601), "{lifetime}");
    assert!(lifetime >= chrono::Duration::seconds(3590), "{lifetime}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/api/accounts/deviceauth/usercode");
    assert_eq!(reqs[0].json(), json!({"client_id": CLIENT_ID}));
    for poll in &reqs[1..4] {
        assert_eq!(poll.path, "/api/accounts/deviceauth/token");
        assert_eq!(
            poll.json(),
            json!({"device_auth_id": "dev-1", "user_code": "ABCD-EFGH"})
        );
    }
    assert_eq!(reqs[4].path, "/oauth/token");
    assert_eq!(
        reqs[4].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let pairs = form_pairs(&reqs[4].body_text());
    let expected: Vec<(String, String)> = [
        ("grant_type", "authorization_code".to_owned()),
        ("code", "code-1".to_owned()),
        ("redirect_uri", format!("{issuer}/deviceauth/callback")),
        ("client_id", CLIENT_ID.to_owned()),
        ("code_verifier", "ver-1".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(pairs, expected);
}

/// Without `expires_in` the access token's JWT `exp` decides the expiry, and
/// `login_and_save` writes the result to the store.
#[tokio::test]
async fn login_uses_jwt_exp_and_saves() {
    let access = make_jwt(&json!({"exp": 1_900_000_000}));
    let server = FakeServer::start(vec![
        Reply::json(
            200,
            &json!({"device_auth_id": "d", "user_code": "U", "interval": 0}),
        ),
        Reply::json(
            200,
            &json!({"authorization_code": "c", "code_verifier": "v"}),
        ),
        Reply::json(
            200,
            &json!({"id_token": id_token(), "access_token": access, "refresh_token": "r"}),
        ),
    ])
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = CredentialStore::in_home(home.path());
    let creds = login_and_save(&store, &server.url(), &fast(), |_| {})
        .await
        .unwrap();
    assert_eq!(creds.expires_at.timestamp(), 1_900_000_000);
    assert_eq!(store.load().unwrap(), Some(creds));
}

/// A login the user never approves ends with a timeout error that says what
/// to do.
#[tokio::test]
async fn login_times_out() {
    let mut replies = vec![Reply::json(
        200,
        &json!({"device_auth_id": "d", "user_code": "U"}),
    )];
    replies.extend((0..50).map(|_| Reply::json(403, &json!({}))));
    let server = FakeServer::start(replies).unwrap();
    let options = LoginOptions {
        timeout: Duration::from_millis(100),
        poll_interval: Some(Duration::from_millis(20)),
    };
    let err = login(&server.url(), &options, |_| {}).await.unwrap_err();
    assert!(matches!(err, AuthError::LoginTimedOut { .. }), "{err:?}");
    assert!(err.to_string().contains("etch auth login"));
}

/// A server error while polling is reported with the URL and status.
#[tokio::test]
async fn login_poll_error_names_url() {
    let server = FakeServer::start(vec![
        Reply::json(200, &json!({"device_auth_id": "d", "user_code": "U"})),
        Reply::json(500, &json!({"error": "boom"})),
    ])
    .unwrap();
    let err = login(&server.url(), &fast(), |_| {}).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, AuthError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert!(msg.contains("/api/accounts/deviceauth/token"), "{msg}");
}

/// Refresh sends the JSON body of the Codex CLI, keeps tokens the server does
/// not rotate, and reads the new account id from a new id token.
#[tokio::test]
async fn refresh_sends_json_and_merges() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        &json!({"access_token": "new-access", "id_token": id_token(), "expires_in": 600}),
    )])
    .unwrap();
    let fresh = refresh(&server.url(), &expired()).await.unwrap();
    assert_eq!(fresh.access_token.expose(), "new-access");
    assert_eq!(fresh.refresh_token.expose(), "old-refresh");
    assert_eq!(fresh.account_id.as_deref(), Some("acct-7"));
    assert!(fresh.expires_at > Utc::now() + chrono::Duration::seconds(590));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/oauth/token");
    assert_eq!(
        reqs[0].json(),
        json!({
            "client_id": CLIENT_ID,
            "grant_type": "refresh_token",
            "refresh_token": "old-refresh",
            "scope": "openid profile email"
        })
    );
}

/// A rejected refresh token tells the user to log in again and leaks no token.
#[tokio::test]
async fn refresh_rejected_says_log_in_again() {
    let server = FakeServer::start(vec![Reply::json(
        401,
        &json!({"error": {"code": "refresh_token_expired"}}),
    )])
    .unwrap();
    let err = refresh(&server.url(), &expired()).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, AuthError::RefreshRejected { status: 401, .. }),
        "{err:?}"
    );
    assert!(msg.contains("etch auth login"), "{msg}");
    assert!(msg.contains("/oauth/token"), "{msg}");
    assert!(!msg.contains("old-refresh") && !format!("{err:?}").contains("old-refresh"));
}

/// `ensure_fresh` refreshes an expired login and saves it; a fresh login is
/// returned without any request.
#[tokio::test]
async fn ensure_fresh_refreshes_only_when_needed() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        &json!({"access_token": "new-access", "refresh_token": "new-refresh", "expires_in": 3600}),
    )])
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = CredentialStore::in_home(home.path());
    store.save(&expired()).unwrap();

    let fresh = ensure_fresh(&store, &server.url()).await.unwrap();
    assert_eq!(fresh.access_token.expose(), "new-access");
    assert_eq!(fresh.refresh_token.expose(), "new-refresh");
    assert_eq!(fresh.account_id.as_deref(), Some("acct-old"));
    assert_eq!(store.load().unwrap(), Some(fresh.clone()));

    // Still valid for an hour: no second request (the server has no reply left).
    let again = ensure_fresh(&store, &server.url()).await.unwrap();
    assert_eq!(again, fresh);
    assert_eq!(server.requests().len(), 1);
}

/// A token expiring within the margin is refreshed early.
#[tokio::test]
async fn ensure_fresh_refreshes_within_margin() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        &json!({"access_token": "new-access", "expires_in": 3600}),
    )])
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = CredentialStore::in_home(home.path());
    let mut soon = expired();
    soon.expires_at = Utc::now() + chrono::Duration::minutes(4);
    store.save(&soon).unwrap();
    let fresh = ensure_fresh(&store, &server.url()).await.unwrap();
    assert_eq!(fresh.access_token.expose(), "new-access");
}

/// With no stored login, `ensure_fresh` says to log in.
#[tokio::test]
async fn ensure_fresh_without_login() {
    let home = tempfile::tempdir().unwrap();
    let store = CredentialStore::in_home(home.path());
    let err = ensure_fresh(&store, "http://127.0.0.1:9")
        .await
        .unwrap_err();
    assert!(matches!(err, AuthError::NotLoggedIn { .. }), "{err:?}");
    assert!(err.to_string().contains("etch auth login"));
}

/// A failed refresh leaves the stored file untouched.
#[tokio::test]
async fn ensure_fresh_failure_keeps_file() {
    let server = FakeServer::start(vec![Reply::json(401, &json!({}))]).unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = CredentialStore::in_home(home.path());
    store.save(&expired()).unwrap();
    let before = std::fs::read(store.path()).unwrap();
    let err = ensure_fresh(&store, &server.url()).await.unwrap_err();
    assert!(matches!(err, AuthError::RefreshRejected { .. }));
    assert_eq!(std::fs::read(store.path()).unwrap(), before);
}

/// The issuer defaults to OpenAI's and honours a non-empty override.
#[test]
fn issuer_override() {
    assert_eq!(issuer_from(None), "https://auth.openai.com");
    assert_eq!(issuer_from(Some(String::new())), "https://auth.openai.com");
    assert_eq!(
        issuer_from(Some("http://127.0.0.1:8080/".to_owned())),
        "http://127.0.0.1:8080"
    );
}

/// Form values are percent-encoded.
#[test]
fn form_encoding() {
    assert_eq!(
        form_encode(&[("a", "x y/z"), ("b", "é&=")]),
        "a=x%20y%2Fz&b=%C3%A9%26%3D"
    );
}

/// Expiry falls back from `expires_in` to JWT `exp` to one hour.
#[test]
fn expiry_fallbacks() {
    let now = DateTime::from_timestamp(1_800_000_000, 123).unwrap();
    assert_eq!(expiry(now, Some(60), "x").timestamp(), 1_800_000_060);
    assert_eq!(expiry(now, Some(60), "x").timestamp_subsec_nanos(), 0);
    let jwt = make_jwt(&json!({"exp": 1_900_000_000}));
    assert_eq!(expiry(now, None, &jwt).timestamp(), 1_900_000_000);
    assert_eq!(expiry(now, None, "opaque").timestamp(), 1_800_003_600);
}
