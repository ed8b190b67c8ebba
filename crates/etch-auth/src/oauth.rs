//! The Codex-style OAuth device flow and token refresh (E-AUTH-02, E-AUTH-11,
//! G17).
//!
//! This module owns the wire protocol with the issuer (`https://auth.openai.com`
//! by default, `ETCH_OAUTH_ISSUER` in tests): requesting a device code, polling
//! for the authorization, exchanging it for tokens, and refreshing them. The
//! issuer is always a parameter so tests point it at a fake server. It must not
//! know the terminal (the user code is handed to a callback) nor the provider
//! that uses the tokens; it never logs or returns a token inside an error.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;

use crate::{AuthError, CredentialStore, OAuthCredentials, Secret, jwt};

/// The issuer used when `ETCH_OAUTH_ISSUER` is unset (the Codex CLI's).
pub const DEFAULT_ISSUER: &str = "https://auth.openai.com";
/// The test-only environment variable that overrides the issuer (G17).
pub const ISSUER_ENV: &str = "ETCH_OAUTH_ISSUER";
/// The OAuth client id of the Codex CLI, whose device flow etch uses.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// How long before expiry a token is refreshed, so it does not expire during a
/// request or a long tool phase.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);
/// How long the device login waits for the user by default.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The poll interval when the server does not name one.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// The lifetime assumed when neither `expires_in` nor a JWT `exp` is given.
const FALLBACK_LIFETIME: chrono::Duration = chrono::Duration::hours(1);
/// The per-request timeout, so a stalled auth server cannot hang etch.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest excerpt of an error body put into an error message.
const DETAIL_LIMIT: usize = 300;

/// The issuer to use given the value of `ETCH_OAUTH_ISSUER` (empty counts as
/// unset); a trailing slash is removed.
pub fn issuer_from(env_value: Option<String>) -> String {
    env_value
        .map(|v| v.trim().trim_end_matches('/').to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_ISSUER.to_owned())
}

/// The issuer from the process environment ([`ISSUER_ENV`]).
pub fn issuer_from_env() -> String {
    issuer_from(std::env::var(ISSUER_ENV).ok())
}

/// What the user must do to approve the login: open `verification_url` and
/// enter `user_code`. Handed to the callback of [`login`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCode {
    /// The page to open, `{issuer}/codex/device`.
    pub verification_url: String,
    /// The one-time code to type there (not a credential by itself).
    pub user_code: String,
}

/// Tuning for [`login`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOptions {
    /// Give up after this long (default [`LOGIN_TIMEOUT`], 15 minutes).
    pub timeout: Duration,
    /// Poll this often instead of the server's `interval` (for tests).
    pub poll_interval: Option<Duration>,
}

impl Default for LoginOptions {
    /// The production settings: 15 minutes, server-chosen interval.
    fn default() -> Self {
        Self {
            timeout: LOGIN_TIMEOUT,
            poll_interval: None,
        }
    }
}

/// The answer of `/api/accounts/deviceauth/usercode`.
#[derive(Deserialize)]
struct UserCodeResponse {
    /// The id of this device authorization, echoed when polling.
    device_auth_id: String,
    /// The code shown to the user (older servers call it `usercode`).
    #[serde(alias = "usercode")]
    user_code: String,
    /// Seconds between polls; the server sends a string or a number.
    #[serde(default)]
    interval: Option<serde_json::Value>,
}

/// The answer of `/api/accounts/deviceauth/token` once the user approved.
#[derive(Deserialize)]
struct DeviceTokenResponse {
    /// The PKCE authorization code to exchange.
    authorization_code: String,
    /// The PKCE verifier the server generated for this flow.
    code_verifier: String,
}

/// The answer of `/oauth/token`, for both the code exchange and a refresh
/// (a refresh may omit the id and refresh tokens).
#[derive(Deserialize)]
struct TokenResponse {
    /// The new access token.
    access_token: Option<String>,
    /// A new refresh token, if rotated.
    refresh_token: Option<String>,
    /// A new id token, if sent.
    id_token: Option<String>,
    /// The access token lifetime in seconds.
    expires_in: Option<i64>,
}

/// The shared HTTP client, built once with the ring TLS provider installed.
fn client() -> Result<&'static reqwest::Client, AuthError> {
    /// The client or the reason it could not be built.
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // Another crate may have installed a provider already; either way
            // one is in place afterwards.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .connect_timeout(REQUEST_TIMEOUT)
                .timeout(REQUEST_TIMEOUT)
                .user_agent(concat!("etch/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| AuthError::Client(e.clone()))
}

/// A response reduced to what this module needs.
struct Answer {
    /// The HTTP status code.
    status: u16,
    /// The full body.
    body: Vec<u8>,
}

impl Answer {
    /// The body as JSON of type `T`, or an error that describes the problem
    /// without quoting the body (a 2xx body may hold tokens).
    fn parse<T: for<'de> Deserialize<'de>>(&self, url: &str) -> Result<T, AuthError> {
        serde_json::from_slice(&self.body).map_err(|e| AuthError::InvalidResponse {
            url: url.to_owned(),
            reason: format!("cannot parse the JSON body: {e}"),
        })
    }

    /// The generic error for an unexpected status, with a short body excerpt
    /// (error bodies carry no tokens).
    fn status_error(&self, url: &str) -> AuthError {
        let text = String::from_utf8_lossy(&self.body);
        let mut detail: String = text.trim().chars().take(DETAIL_LIMIT).collect();
        if detail.is_empty() {
            detail.push_str("empty body");
        }
        AuthError::Status {
            url: url.to_owned(),
            status: self.status,
            detail,
        }
    }

    /// Whether the status is 2xx.
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// POSTs `body` with `content_type` to `url` and reads the whole answer.
async fn post(url: &str, content_type: &str, body: Vec<u8>) -> Result<Answer, AuthError> {
    let network = |e: reqwest::Error| AuthError::Network {
        url: url.to_owned(),
        // Without the URL: it is already in the message, and reqwest's Display
        // never includes request bodies.
        message: e.without_url().to_string(),
    };
    let response = client()?
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(network)?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(network)?.to_vec();
    Ok(Answer { status, body })
}

/// POSTs a JSON value.
async fn post_json(url: &str, value: &serde_json::Value) -> Result<Answer, AuthError> {
    post(url, "application/json", value.to_string().into_bytes()).await
}

/// Encodes `pairs` as `application/x-www-form-urlencoded`.
fn form_encode(pairs: &[(&str, &str)]) -> String {
    /// Percent-encodes everything but RFC 3986 unreserved characters.
    fn encode(s: &str, out: &mut String) {
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode(k, &mut out);
        out.push('=');
        encode(v, &mut out);
    }
    out
}

/// The poll interval named by the server (`"5"` or `5`), if any.
fn parse_interval(value: Option<&serde_json::Value>) -> Option<Duration> {
    let secs = match value? {
        serde_json::Value::Number(n) => n.as_u64()?,
        serde_json::Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

/// When the access token expires: `expires_in` if given, else the token's JWT
/// `exp`, else one hour from `now`.
/// The result is truncated to whole seconds, the precision of the credential
/// file, so that what is returned equals what a later load reads back.
fn expiry(now: DateTime<Utc>, expires_in: Option<i64>, access_token: &str) -> DateTime<Utc> {
    let at = expires_in
        .filter(|s| *s > 0)
        .and_then(chrono::Duration::try_seconds)
        .map(|d| now + d)
        .or_else(|| jwt::expiry(access_token))
        .unwrap_or(now + FALLBACK_LIFETIME);
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

/// A non-empty string field of a token response, or the error naming it.
fn required(value: Option<String>, field: &str, url: &str) -> Result<String, AuthError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or_else(|| AuthError::InvalidResponse {
            url: url.to_owned(),
            reason: format!("`{field}` is missing"),
        })
}

/// Runs the device login against `issuer` and returns the new credentials
/// (not yet saved; see [`login_and_save`]).
///
/// `on_code` is called once with the URL and code to show the user. The
/// function then polls until the user approves, the server refuses, or
/// `options.timeout` passes ([`AuthError::LoginTimedOut`]). To cancel (e.g. on
/// Ctrl-C), drop the future, for instance via `tokio::select!`.
pub async fn login<F>(
    issuer: &str,
    options: &LoginOptions,
    on_code: F,
) -> Result<OAuthCredentials, AuthError>
where
    F: FnOnce(&DeviceCode) + Send,
{
    let deadline = tokio::time::Instant::now() + options.timeout;

    let url = format!("{issuer}/api/accounts/deviceauth/usercode");
    let answer = post_json(&url, &json!({ "client_id": CLIENT_ID })).await?;
    if !answer.ok() {
        return Err(answer.status_error(&url));
    }
    let code: UserCodeResponse = answer.parse(&url)?;
    let interval = options
        .poll_interval
        .or_else(|| parse_interval(code.interval.as_ref()))
        .unwrap_or(DEFAULT_POLL_INTERVAL);
    on_code(&DeviceCode {
        verification_url: format!("{issuer}/codex/device"),
        user_code: code.user_code.clone(),
    });

    let url = format!("{issuer}/api/accounts/deviceauth/token");
    let poll_body = json!({
        "device_auth_id": code.device_auth_id,
        "user_code": code.user_code,
    });
    let approved: DeviceTokenResponse = loop {
        let answer = post_json(&url, &poll_body).await?;
        match answer.status {
            // Still waiting for the user.
            403 | 404 => {}
            _ if answer.ok() => break answer.parse(&url)?,
            _ => return Err(answer.status_error(&url)),
        }
        if tokio::time::Instant::now() + interval >= deadline {
            return Err(AuthError::LoginTimedOut {
                minutes: options.timeout.as_secs().div_ceil(60),
            });
        }
        tokio::time::sleep(interval).await;
    };

    let url = format!("{issuer}/oauth/token");
    let redirect_uri = format!("{issuer}/deviceauth/callback");
    let form = form_encode(&[
        ("grant_type", "authorization_code"),
        ("code", &approved.authorization_code),
        ("redirect_uri", &redirect_uri),
        ("client_id", CLIENT_ID),
        ("code_verifier", &approved.code_verifier),
    ]);
    let answer = post(&url, "application/x-www-form-urlencoded", form.into_bytes()).await?;
    if !answer.ok() {
        return Err(answer.status_error(&url));
    }
    let tokens: TokenResponse = answer.parse(&url)?;
    let access_token = required(tokens.access_token, "access_token", &url)?;
    let refresh_token = required(tokens.refresh_token, "refresh_token", &url)?;
    let id_token = tokens.id_token.filter(|t| !t.is_empty());
    Ok(OAuthCredentials {
        expires_at: expiry(Utc::now(), tokens.expires_in, &access_token),
        account_id: id_token.as_deref().and_then(jwt::account_id),
        access_token: Secret::from(access_token),
        refresh_token: Secret::from(refresh_token),
        id_token: id_token.map(Secret::from),
    })
}

/// [`login`], then saves the credentials atomically to `store`
/// (what `etch auth login` does).
pub async fn login_and_save<F>(
    store: &CredentialStore,
    issuer: &str,
    options: &LoginOptions,
    on_code: F,
) -> Result<OAuthCredentials, AuthError>
where
    F: FnOnce(&DeviceCode) + Send,
{
    let credentials = login(issuer, options, on_code).await?;
    store.save(&credentials)?;
    Ok(credentials)
}

/// Exchanges the refresh token of `current` for new tokens at `issuer`.
/// Tokens the server does not rotate are kept. A 400/401/403 answer means the
/// login is no longer valid: [`AuthError::RefreshRejected`] tells the user to
/// log in again.
pub async fn refresh(
    issuer: &str,
    current: &OAuthCredentials,
) -> Result<OAuthCredentials, AuthError> {
    let url = format!("{issuer}/oauth/token");
    let answer = post_json(
        &url,
        &json!({
            "client_id": CLIENT_ID,
            "grant_type": "refresh_token",
            "refresh_token": current.refresh_token.expose(),
            "scope": "openid profile email",
        }),
    )
    .await?;
    match answer.status {
        400 | 401 | 403 => {
            return Err(AuthError::RefreshRejected {
                url,
                status: answer.status,
            });
        }
        _ if !answer.ok() => return Err(answer.status_error(&url)),
        _ => {}
    }
    let tokens: TokenResponse = answer.parse(&url)?;
    let access_token = required(tokens.access_token, "access_token", &url)?;
    let id_token = tokens
        .id_token
        .filter(|t| !t.is_empty())
        .map(Secret::from)
        .or_else(|| current.id_token.clone());
    let account_id = id_token
        .as_ref()
        .and_then(|t| jwt::account_id(t.expose()))
        .or_else(|| current.account_id.clone());
    Ok(OAuthCredentials {
        expires_at: expiry(Utc::now(), tokens.expires_in, &access_token),
        access_token: Secret::from(access_token),
        refresh_token: tokens
            .refresh_token
            .filter(|t| !t.is_empty())
            .map_or_else(|| current.refresh_token.clone(), Secret::from),
        id_token,
        account_id,
    })
}

/// Loads the stored login and, if it is expired or expires within
/// [`REFRESH_MARGIN`], refreshes it at `issuer` and saves the result
/// atomically. Call before every provider request in OAuth mode (P-AUTH-01).
/// Fails with [`AuthError::NotLoggedIn`] when there is no stored login.
pub async fn ensure_fresh(
    store: &CredentialStore,
    issuer: &str,
) -> Result<OAuthCredentials, AuthError> {
    let current = store.load()?.ok_or_else(|| AuthError::NotLoggedIn {
        path: store.path().to_path_buf(),
    })?;
    let margin = chrono::Duration::from_std(REFRESH_MARGIN).unwrap_or(chrono::Duration::zero());
    if !current.needs_refresh(Utc::now(), margin) {
        return Ok(current);
    }
    let fresh = refresh(issuer, &current).await?;
    store.save(&fresh)?;
    Ok(fresh)
}

#[cfg(test)]
mod tests;
