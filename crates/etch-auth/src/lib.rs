//! OpenAI auth for etch: the stored ChatGPT/Codex OAuth login, the Codex-style
//! device flow and token refresh, and which auth mode applies.
//!
//! This crate owns the credential file `~/.etch/auth/openai.json` (G17,
//! E-AUTH-08), the OAuth wire protocol with the issuer (E-AUTH-02, E-AUTH-11)
//! and the precedence of auth modes with their UI labels (E-AUTH-03,
//! E-AUTH-07). It must not know the CLI, the terminal or the provider request
//! shapes; those crates call the API below. Tokens are held in [`Secret`],
//! whose `Debug`/`Display` redact, and no error ever contains one (E-AUTH-10).
//!
//! # Wiring for the CLI and the provider
//!
//! * `etch auth login` (E-CLI-10): build `CredentialStore::in_home(&home)`,
//!   then `oauth::login_and_save(&store, &oauth::issuer_from_env(),
//!   &LoginOptions::default(), |code| println!("Open {} and enter {}",
//!   code.verification_url, code.user_code))`. Cancel on Ctrl-C by dropping
//!   the future (`tokio::select!` with `tokio::signal::ctrl_c()`).
//! * `etch auth status`: `store.load()` (`Ok(None)` = not logged in) and
//!   `resolve_mode(&AuthInputs::from_env(flag, store.exists(), |k|
//!   std::env::var(k).ok()))`, printing `mode.label()`.
//! * `etch auth logout`: `store.delete()` (returns whether a file existed).
//! * Provider, before every request (P-AUTH-01): resolve the mode; for
//!   [`AuthMode::CodexOAuth`] call `oauth::ensure_fresh(&store, &issuer)` and
//!   send `access_token.expose()` as the bearer token plus `account_id` as the
//!   `chatgpt-account-id` header; for other modes use
//!   `inputs.secret_for(mode)`. If `ensure_fresh` fails, E-AUTH-03 says the
//!   stored login is not usable: fall through by re-resolving with
//!   `stored_login = false`, or surface the error (it tells the user to run
//!   `etch auth login`).
//! * Child processes (G18): remove [`CREDENTIAL_ENV_VARS`].

pub mod codex;
mod error;
mod jwt;
mod modes;
pub mod oauth;
mod secret;
mod store;

pub use error::AuthError;
pub use jwt::account_id as account_id_from_id_token;
pub use modes::{
    ApiKeySource, AuthInputs, AuthMode, CREDENTIAL_ENV_VARS, ENV_ANTHROPIC_API_KEY,
    ENV_CODEX_ACCESS_TOKEN, ENV_OPENAI_API_KEY, ENV_OPENROUTER_API_KEY, resolve_mode,
};
pub use oauth::{DeviceCode, LoginOptions};
pub use secret::Secret;
pub use store::{CREDENTIAL_TYPE, CredentialStore, OAuthCredentials};
