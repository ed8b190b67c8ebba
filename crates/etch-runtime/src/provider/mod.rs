//! The provider factory: from typed flags, the configuration, a resumed
//! session's record and the environment to a model client (C42,
//! E-AUTH-03). Front ends (the command line, RPC, a subagent profile,
//! `/model`) build their [`ProviderFlags`] and call [`select`]; notices
//! come back as values, never printed here.
//!
//! Without a provider flag, etch picks `openai` when an OpenAI credential
//! is available (the key flag, `OPENAI_API_KEY`, `OPENROUTER_API_KEY`, a
//! stored login) and otherwise runs the offline `echo` model, with the
//! [`NO_CREDENTIALS`] notice. Credentials come only from the flags and the
//! environment and never appear in a notice or an error.
//!
//! Where requests go: `--base-url`, else for a resumed session the endpoint
//! its `session.started` recorded, else `[openai] base_url`, else the
//! provider's default. Every base URL is checked before the run (a typo is
//! a usage error, not a minute of retries). An environment key goes only to
//! its own service (`OPENAI_API_KEY` to api.openai.com, `OPENROUTER_API_KEY`
//! to openrouter.ai) and the ChatGPT login only to chatgpt.com, unless
//! `[openai] auth` (`api-key`, `login`) says otherwise, so a local server
//! never receives the user's real credentials; `--api-key` is always sent.
//! It must not know the command line, terminals or exit codes: whoever
//! calls it prints and maps [`SelectError`].
//!
//! The OpenAI clients (login or key, which key may go where, transport)
//! are chosen in `select_openai`, the Anthropic client in
//! `select_anthropic`.
//!
//! `ETCH_ECHO_DELAY_MS` makes the echo model wait before replying;
//! `ETCH_IDLE_TIMEOUT_SECS` and `ETCH_RETRY_BASE_DELAY_MS` override
//! `[provider] idle_timeout_secs` and `retry_base_delay_ms`, so tests can
//! exercise stalls and retries quickly.

use std::sync::Arc;
use std::time::Duration;

use etch_auth::{
    AuthInputs, AuthMode, CredentialStore, ENV_OPENAI_API_KEY, ENV_OPENROUTER_API_KEY, Secret,
    oauth, resolve_mode,
};
use etch_model::{ErrorKind, ModelClient, ModelError};
use etch_provider::EchoClient;
use etch_provider::anthropic::{self, AnthropicClient, AnthropicConfig};
use etch_provider::http::{CredentialSource, HeadersFuture, RetryPolicy, StreamLimits};
use etch_provider::openai::chat::{ChatClient, ChatConfig};
use etch_provider::openai::responses::{ResponsesClient, ResponsesConfig};
use etch_provider::openai::responses_ws::Transport;

use etch_config::Config;

use crate::endpoints::KnownEndpoints;

mod select_anthropic;
mod select_openai;

use select_anthropic::anthropic_client;
use select_openai::openai;

/// Every provider name the `--provider` flag accepts (the configuration
/// schema owns the list).
pub const PROVIDERS: &[&str] = etch_config::PROVIDERS;

/// The exact stderr line when no credentials are found (C42).
pub const NO_CREDENTIALS: &str = "etch: no model credentials found; using the offline echo model (see 'etch auth login' or set OPENAI_API_KEY)";

/// Default OpenAI base URL (E-CFG-10).
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Default model of the openai provider (E-CFG-09).
const OPENAI_MODEL: &str = etch_config::DEFAULT_MODEL;

/// UI label of API-key auth (E-AUTH-07, G17).
pub const LABEL_API_KEY: &str = "OpenAI: Platform API key";

/// What a front end asked for, as typed values (the command line's flags,
/// an RPC `set_model`, a subagent profile); `None` leaves the choice to the
/// session's record, the configuration and the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFlags {
    /// Provider name: `echo`, `openai` or `anthropic`.
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Base URL of the endpoint.
    pub base_url: Option<String>,
    /// An API key given explicitly (always sent).
    pub api_key: Option<String>,
    /// OpenAI API shape: `chat` or `responses`.
    pub openai_api: Option<String>,
    /// Responses transport: `sse`, `websocket` or `auto`.
    pub openai_transport: Option<String>,
    /// Reasoning effort (`off` sends none).
    pub reasoning_effort: Option<String>,
    /// Reasoning summary detail.
    pub reasoning_summary: Option<String>,
    /// No retries before a pass's output (Pi's `set_auto_retry false`):
    /// a 429 or 5xx fails the pass at once.
    pub no_retry: bool,
}

impl ProviderFlags {
    /// Switches to `model` of `provider` (`current` is the provider in
    /// use). For another provider, the endpoint, key and API shape given
    /// for the old one do not carry over: they belong to its service.
    pub fn switch_model(&mut self, provider: &str, model: &str, current: &str) {
        if self.provider.as_deref() != Some(provider) && current != provider {
            self.base_url = None;
            self.api_key = None;
            self.openai_api = None;
            self.openai_transport = None;
        }
        self.provider = Some(provider.to_owned());
        self.model = Some(model.to_owned());
    }
}

/// Why no client could be built; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// The request itself is wrong (an unknown provider, a malformed base
    /// URL, contradictory options): a usage error.
    #[error("{0}")]
    Usage(String),
    /// The request is fine but cannot be served (no credentials, a login
    /// that cannot be refreshed).
    #[error("{0}")]
    Failed(String),
    /// A resumed session recorded an endpoint the user never chose (the
    /// URL): it is not reused until they name it.
    #[error("{}", crate::endpoints::unfamiliar(.0))]
    Unfamiliar(String),
}

/// A chosen client plus lines for the user.
pub struct Selection {
    /// The client.
    pub client: Arc<dyn ModelClient>,
    /// The header line naming provider, model, endpoint and auth, if any.
    pub notice: Option<String>,
    /// Notes and warnings to show before it (a switched endpoint, a
    /// configured transport that does not apply).
    pub notes: Vec<String>,
    /// The base URL requests go to (recorded in `session.started`); `None`
    /// for the offline echo model.
    pub endpoint: Option<String>,
    /// The auth label (`OpenAI: Platform API key (--api-key)`, …) the
    /// header names, for front ends that show it on its own; `None` for
    /// the offline echo model.
    pub auth: Option<String>,
}

/// What a session's `session.started` says about how it was run.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// Provider name.
    pub provider: &'a str,
    /// Model name.
    pub model: &'a str,
    /// Endpoint base URL, when the session recorded one.
    pub base_url: Option<&'a str>,
    /// OpenAI API shape (`chat` or `responses`), when recorded.
    pub openai_api: Option<&'a str>,
}

/// A non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Default backend of ChatGPT/Codex logins (E-AUTH-05).
const CODEX_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";

/// The stored login's file under the home directory, if HOME is set.
fn credential_store() -> Option<CredentialStore> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| CredentialStore::in_home(std::path::Path::new(&h)))
}

/// The provider a run without `--provider` or `[provider] name` uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auto {
    /// OpenAI, with the first of its credentials found (E-AUTH-03: the
    /// flag's key, `OPENAI_API_KEY`, a stored login, …).
    OpenAi(AuthMode),
    /// Anthropic, with `ANTHROPIC_API_KEY`.
    Anthropic,
    /// The offline echo model: no credentials were found.
    Echo,
}

/// The rule that picks a provider when none is named: OpenAI when any of
/// its credentials is found, else Anthropic when its key is set, else
/// the offline echo model. `etch auth status` says what it picks.
pub fn auto(args: &ProviderFlags) -> Auto {
    match openai_auth(args).0 {
        Some(mode) => Auto::OpenAi(mode),
        None if env(etch_auth::ENV_ANTHROPIC_API_KEY).is_some() => Auto::Anthropic,
        None => Auto::Echo,
    }
}

/// The OpenAI auth mode of E-AUTH-03, with the inputs it was resolved from.
fn openai_auth(args: &ProviderFlags) -> (Option<AuthMode>, AuthInputs) {
    let stored = credential_store().is_some_and(|s| s.exists());
    let inputs = AuthInputs::from_env(args.api_key.clone().map(Secret::from), stored, env);
    (resolve_mode(&inputs), inputs)
}

/// Picks the provider for continuing `session`: the provider, model and
/// endpoint it was started with, unless a flag says otherwise, with a note
/// when this run goes somewhere other than the session's recorded
/// endpoint.
pub async fn select_for_session(
    args: &ProviderFlags,
    config: &Config,
    session: &etch_session::LoadedSession,
    known: &KnownEndpoints,
) -> Result<Selection, SelectError> {
    // What session.started recorded, as later model.change and
    // thinking_level.change events on the branch left it.
    let state = etch_session::model_state(session);
    let recorded = Recorded {
        provider: &state.provider,
        model: &state.model,
        base_url: state.base_url.as_deref(),
        openai_api: state.openai_api.as_deref(),
    };
    // The recorded endpoint would be used as it is: only one the user
    // chose (a session file may have come with the repository).
    if args.base_url.is_none()
        && let Some(url) = recorded.base_url
        && args
            .provider
            .as_deref()
            .is_none_or(|p| p == recorded.provider)
        && !known.knows(url)
        && !(recorded.provider == "openai"
            && config
                .openai
                .base_url
                .as_deref()
                .is_some_and(|configured| crate::endpoints::same(configured, url)))
    {
        return Err(SelectError::Unfamiliar(url.to_owned()));
    }
    let mut with_level = args.clone();
    if with_level.reasoning_effort.is_none() {
        with_level
            .reasoning_effort
            .clone_from(&state.thinking_level);
    }
    let mut selection = select(&with_level, config, Some(recorded)).await?;
    if let Some(note) = endpoint_note(args, config, &recorded, selection.endpoint.as_deref()) {
        selection.notes.insert(0, note);
    }
    Ok(selection)
}

/// The `model.change` to record when `selection` differs from what the
/// session's branch used so far (`state`), so later runs go on with it.
pub fn model_change(
    state: &etch_session::ModelState,
    selection: &Selection,
) -> Option<etch_session::event::ModelChangeData> {
    let client = &selection.client;
    let changed = client.provider() != state.provider
        || client.model() != state.model
        || selection.endpoint != state.base_url
        || (client.api().is_some() && client.api() != state.openai_api.as_deref());
    changed.then(|| etch_session::event::ModelChangeData {
        provider: client.provider().to_owned(),
        model: client.model().to_owned(),
        openai_api: client.api().map(str::to_owned),
        base_url: selection.endpoint.clone(),
    })
}

/// The `thinking_level.change` to record when a flag set a reasoning
/// effort other than the branch's.
pub fn thinking_change(
    state: &etch_session::ModelState,
    flags: &ProviderFlags,
) -> Option<etch_session::event::ThinkingLevelData> {
    let level = flags.reasoning_effort.as_deref()?;
    (state.thinking_level.as_deref() != Some(level)).then(|| {
        etch_session::event::ThinkingLevelData {
            level: level.to_owned(),
        }
    })
}

/// Why a resumed session's requests go to `used` and not where they went
/// before, or where the configuration points; `None` when nothing differs.
fn endpoint_note(
    args: &ProviderFlags,
    config: &Config,
    recorded: &Recorded<'_>,
    used: Option<&str>,
) -> Option<String> {
    let Some(before) = recorded.base_url else {
        // Sessions written before endpoints were recorded: say where this
        // one goes, since it may not be where it ran.
        return (args.base_url.is_none() && recorded.provider != "echo")
            .then_some(used)
            .flatten()
            .map(|used| {
                format!(
                    "etch: note: this session does not record its endpoint (an older etch wrote it); \
                     this run uses {used}; pass --base-url if it ran elsewhere"
                )
            });
    };
    let used = used.unwrap_or("the offline echo model");
    if used != before {
        let why = if args.base_url.is_some() {
            "--base-url"
        } else if args
            .provider
            .as_deref()
            .is_some_and(|p| p != recorded.provider)
        {
            "another provider was chosen"
        } else {
            "the configuration"
        };
        return Some(format!(
            "etch: note: this session ran against {before}; this run uses {used} ({why})"
        ));
    }
    let configured = config.openai.base_url.as_deref()?;
    (recorded.provider == "openai" && configured != before).then(|| {
        format!(
            "etch: note: resuming against the session's endpoint {before}, not [openai] base_url {configured}; \
             pass --base-url to change it"
        )
    })
}

/// Settings from the configuration that no flag carries.
struct Knobs {
    /// Retry policy (`[provider] max_retries`, `retry_base_delay_ms`).
    retry: RetryPolicy,
    /// Stalled-stream timeout (`[provider] idle_timeout_secs`).
    idle_timeout: Duration,
    /// `[provider] max_frame_bytes` and `max_message_bytes`.
    limits: StreamLimits,
    /// `[openai] stream_usage` (G19).
    stream_usage: bool,
    /// `[openai] auth`: which credentials an endpoint gets.
    auth: String,
    /// `[anthropic] auth`: which credentials an Anthropic endpoint gets.
    anthropic_auth: String,
    /// `[provider] allow_http_credentials`: credentials may cross a
    /// network in cleartext.
    allow_http_credentials: bool,
    /// Whether `--openai-transport` was given (a WebSocket transport with
    /// Chat Completions is then a usage error rather than a warning).
    transport_flag: bool,
}

/// Picks the provider for a run. Precedence (E-CFG-03): flags, then for a
/// resumed session the provider, model and endpoint it was started with
/// (`recorded`), then the configuration, then auto-selection from
/// credentials (C42).
pub async fn select(
    args: &ProviderFlags,
    config: &Config,
    recorded: Option<Recorded<'_>>,
) -> Result<Selection, SelectError> {
    let provider = args
        .provider
        .as_deref()
        .or(recorded.map(|r| r.provider))
        .or(config.provider.name.as_deref());
    // A configured model belongs to the configured provider: it is not sent
    // to another provider chosen by a flag, a resumed session or
    // auto-selection.
    let configured_model =
        config.provider.model.as_deref().filter(|_| {
            config.provider.name.is_none() || config.provider.name.as_deref() == provider
        });
    let model = args
        .model
        .as_deref()
        .or(recorded.map(|r| r.model))
        .or(configured_model);
    // The recorded endpoint (and API shape) belong to the recorded provider.
    let same_provider = recorded.filter(|r| Some(r.provider) == provider);
    let recorded_url = same_provider.and_then(|r| r.base_url);
    let knobs = Knobs {
        retry: if args.no_retry {
            RetryPolicy {
                max_retries: 0,
                ..retry_policy(config)
            }
        } else {
            retry_policy(config)
        },
        idle_timeout: idle_timeout(config),
        limits: stream_limits(config),
        stream_usage: config.openai.stream_usage,
        auth: config.openai.auth.clone(),
        anthropic_auth: config.anthropic.auth.clone(),
        allow_http_credentials: config.provider.allow_http_credentials,
        transport_flag: args.openai_transport.is_some(),
    };
    let openai_args = with_openai_config(
        args,
        config,
        recorded_url,
        same_provider.and_then(|r| r.openai_api),
    );
    let mut anthropic_args = args.clone();
    anthropic_args.base_url = args.base_url.clone().or(recorded_url.map(str::to_owned));
    match provider {
        Some("echo") => Ok(echo(model, None)),
        Some("openai") => openai(&openai_args, model, &knobs).await,
        Some("anthropic") => anthropic_client(&anthropic_args, model, &knobs),
        Some(other) => Err(SelectError::Usage(format!(
            "unknown provider \"{other}\": expected one of {}",
            PROVIDERS.join(", ")
        ))),
        None => match auto(args) {
            Auto::OpenAi(_) => openai(&openai_args, model, &knobs).await,
            Auto::Anthropic => anthropic_client(&anthropic_args, model, &knobs),
            Auto::Echo => Ok(echo(model, Some(NO_CREDENTIALS.to_string()))),
        },
    }
}

/// The run flags with the recorded endpoint and API shape, then `[openai]`
/// settings, filling what no flag gave. Only the OpenAI provider reads the
/// result, so `[openai]` never affects Anthropic (whose thinking budget
/// comes from the flag alone).
fn with_openai_config(
    args: &ProviderFlags,
    config: &Config,
    recorded_url: Option<&str>,
    recorded_api: Option<&str>,
) -> ProviderFlags {
    let openai = &config.openai;
    let mut merged = args.clone();
    merged.base_url = args
        .base_url
        .clone()
        .or_else(|| recorded_url.map(str::to_owned))
        .or_else(|| openai.base_url.clone());
    merged.openai_api = args
        .openai_api
        .clone()
        .or_else(|| recorded_api.map(str::to_owned))
        .or_else(|| Some(openai.api.clone()));
    merged.openai_transport = args
        .openai_transport
        .clone()
        .or_else(|| Some(openai.transport.clone()));
    merged.reasoning_effort = args
        .reasoning_effort
        .clone()
        .or_else(|| Some(openai.reasoning_effort.clone()));
    merged.reasoning_summary = args
        .reasoning_summary
        .clone()
        .or_else(|| Some(openai.reasoning_summary.clone()));
    merged
}

/// A base URL checked before the run: a usage error naming the URL and
/// how to write it.
fn checked_url(url: String) -> Result<String, SelectError> {
    etch_provider::http::check_base_url(&url).map_err(SelectError::Usage)?;
    Ok(url)
}

/// The offline echo model.
fn echo(model: Option<&str>, notice: Option<String>) -> Selection {
    let delay = env("ETCH_ECHO_DELAY_MS")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis);
    Selection {
        client: Arc::new(
            EchoClient::new(model.unwrap_or(etch_provider::echo::NAME)).with_delay(delay),
        ),
        notice,
        notes: Vec::new(),
        endpoint: None,
        auth: None,
    }
}

/// Retry policy from `[provider]`, with `ETCH_RETRY_BASE_DELAY_MS` (a test
/// knob) winning over the configured first delay.
fn retry_policy(config: &Config) -> RetryPolicy {
    let configured = config.provider.retry_base_delay_ms;
    RetryPolicy {
        max_retries: config.provider.max_retries,
        base_delay: Duration::from_millis(
            env("ETCH_RETRY_BASE_DELAY_MS")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(configured),
        ),
        ..RetryPolicy::default()
    }
}

/// Idle timeout from `[provider] idle_timeout_secs`, with
/// `ETCH_IDLE_TIMEOUT_SECS` (a test knob) winning.
fn idle_timeout(config: &Config) -> Duration {
    let secs = env("ETCH_IDLE_TIMEOUT_SECS")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(config.provider.idle_timeout_secs);
    Duration::from_secs(secs)
}

/// The caps on one frame and one message from `[provider]`.
fn stream_limits(config: &Config) -> StreamLimits {
    // Validation keeps both at least 1024; a value past the address
    // space is no cap at all.
    let bytes = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
    StreamLimits {
        max_frame_bytes: bytes(config.provider.max_frame_bytes),
        max_message_bytes: bytes(config.provider.max_message_bytes),
    }
}

/// The reasoning effort in force: the flag, else `minimal` (E-CFG-10);
/// `off` means none at all (C35).
fn reasoning_effort(args: &ProviderFlags) -> Option<String> {
    let effort = args.reasoning_effort.as_deref().unwrap_or("minimal");
    (effort != "off").then(|| effort.to_string())
}

/// The reasoning summary detail in force: the flag, else `auto`.
fn reasoning_summary(args: &ProviderFlags) -> String {
    args.reasoning_summary
        .clone()
        .unwrap_or_else(|| "auto".to_string())
}

/// Refuses to send `what` (a credential) to `base_url` over plain http
/// when the host is not this machine: anyone on the path could read it.
/// `[provider] allow_http_credentials = true` in the user's own file
/// allows it, for a server on a network they trust.
fn refuse_cleartext(base_url: &str, what: &str, knobs: &Knobs) -> Result<(), SelectError> {
    if knobs.allow_http_credentials || !base_url.to_ascii_lowercase().starts_with("http://") {
        return Ok(());
    }
    let host = etch_provider::http::host_of(base_url).unwrap_or_default();
    if is_loopback(&host) {
        return Ok(());
    }
    Err(SelectError::Usage(format!(
        "refusing to send {what} to {base_url} over plain http: anyone between you and {host} could read it; \
         use https://, or set [provider] allow_http_credentials = true in ~/.etch/config.toml for a server on a network you trust"
    )))
}

/// Whether `host` (as a URL gives it) is this machine or on the local
/// network: loopback, private (RFC 1918, IPv6 unique local) and
/// link-local addresses, and `localhost` and `.local` names.
pub(crate) fn is_local_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name = bare.to_ascii_lowercase();
    if is_loopback(bare) || name.rsplit_once('.').is_some_and(|(_, tld)| tld == "local") {
        return true;
    }
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            // fc00::/7 (unique local) and fe80::/10 (link-local).
            first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
        }
        Err(_) => false,
    }
}

/// Whether `host` (as a URL gives it) is this machine.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare == "localhost"
        || bare.ends_with(".localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Where a key may be sent: the host it belongs to.
const OPENAI_HOST: &str = "api.openai.com";
/// OpenRouter's API host, the home of `OPENROUTER_API_KEY`.
const OPENROUTER_HOST: &str = "openrouter.ai";

#[cfg(test)]
mod tests {
    use super::select_openai::is_openai_service;
    use super::*;

    use crate::testkit::block;

    /// Another provider's model drops the old endpoint and key; the same
    /// provider keeps them.
    #[test]
    fn switching_provider_drops_its_endpoint_and_key() {
        let mut f = ProviderFlags {
            provider: Some("openai".into()),
            model: Some("a".into()),
            base_url: Some("http://x/v1".into()),
            api_key: Some("sk-1".into()),
            ..ProviderFlags::default()
        };
        f.switch_model("openai", "b", "openai");
        assert_eq!(
            (f.model.as_deref(), f.api_key.as_deref()),
            (Some("b"), Some("sk-1"))
        );
        f.switch_model("anthropic", "claude", "openai");
        assert_eq!(f.provider.as_deref(), Some("anthropic"));
        assert!(f.base_url.is_none() && f.api_key.is_none());
    }

    /// Flags naming `provider` and `base_url`.
    fn flags(provider: &str, base_url: Option<&str>) -> ProviderFlags {
        ProviderFlags {
            provider: Some(provider.to_owned()),
            base_url: base_url.map(str::to_owned),
            ..ProviderFlags::default()
        }
    }

    /// The echo provider needs nothing and has no endpoint; an unknown
    /// provider and a base URL without a scheme are usage errors naming
    /// what to do; an explicit key reaches a local server with a notice
    /// that says which key, never the key itself.
    #[test]
    fn selection_outcomes() {
        let config = Config::default();
        let echo = block(select(&flags("echo", None), &config, None)).unwrap();
        assert_eq!(echo.endpoint, None);
        assert_eq!(echo.client.provider(), "echo");
        let Err(SelectError::Usage(message)) = block(select(&flags("bogus", None), &config, None))
        else {
            panic!("an unknown provider is a usage error");
        };
        assert!(message.contains("expected one of echo, openai, anthropic"));
        let Err(SelectError::Usage(message)) = block(select(
            &flags("openai", Some("localhost:8080/v1")),
            &config,
            None,
        )) else {
            panic!("a base URL without a scheme is a usage error");
        };
        assert!(message.contains("http://localhost:8080/v1"), "{message}");
        let mut keyed = flags("openai", Some("http://127.0.0.1:9/v1"));
        keyed.api_key = Some("sk-secret".to_owned());
        let local = block(select(&keyed, &config, None)).unwrap();
        assert_eq!(local.endpoint.as_deref(), Some("http://127.0.0.1:9/v1"));
        let notice = local.notice.unwrap();
        assert!(
            notice.contains("(--api-key)") && !notice.contains("sk-secret"),
            "{notice}"
        );
    }

    /// A key never crosses a network in cleartext: plain http only to
    /// this machine, unless the user's file allows it.
    #[test]
    fn credentials_need_https_off_this_machine() {
        let mut knobs = Knobs {
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(1),
            limits: StreamLimits::default(),
            stream_usage: true,
            auth: "auto".into(),
            anthropic_auth: "auto".into(),
            allow_http_credentials: false,
            transport_flag: false,
        };
        for url in [
            "https://api.openai.com/v1",
            "http://127.0.0.1:8080/v1",
            "http://localhost:1/v1",
            "http://[::1]:8080/v1",
        ] {
            assert!(refuse_cleartext(url, "k", &knobs).is_ok(), "{url}");
        }
        let Err(SelectError::Usage(message)) =
            refuse_cleartext("http://api.openai.com/v1", "your API key", &knobs)
        else {
            panic!("cleartext to a remote host is refused");
        };
        assert!(
            message.contains("over plain http") && message.contains("allow_http_credentials"),
            "{message}"
        );
        knobs.allow_http_credentials = true;
        assert!(refuse_cleartext("http://10.0.0.5/v1", "k", &knobs).is_ok());
        let mut keyed = flags("openai", Some("http://api.openai.com/v1"));
        keyed.api_key = Some("sk-secret".to_owned());
        let refused = block(select(&keyed, &Config::default(), None));
        assert!(matches!(refused, Err(SelectError::Usage(_))));
    }

    /// OpenAI's own services are recognised by host, not by prefix.
    #[test]
    fn openai_services_by_host() {
        assert!(is_openai_service("https://api.openai.com/v1"));
        assert!(is_openai_service("https://chatgpt.com/backend-api/codex"));
        assert!(!is_openai_service("http://127.0.0.1:8080/v1"));
        assert!(!is_openai_service("https://api.openai.com.evil.example/v1"));
        assert!(!is_openai_service("https://openrouter.ai/api/v1"));
    }

    /// Flags that name a base URL.
    fn moved_flags() -> ProviderFlags {
        flags("openai", Some("http://127.0.0.1:2/v1"))
    }

    /// A resumed session says where it goes when that is not where it went.
    #[test]
    fn endpoint_notes() {
        let config = Config::default();
        let recorded = Recorded {
            provider: "openai",
            model: "m",
            base_url: Some("http://127.0.0.1:1/v1"),
            openai_api: Some("chat"),
        };
        let unset = ProviderFlags::default();
        let old = Recorded {
            base_url: None,
            ..recorded
        };
        let note = endpoint_note(&unset, &config, &old, Some("https://api.openai.com/v1")).unwrap();
        assert!(note.contains("does not record its endpoint"), "{note}");
        assert!(endpoint_note(&moved_flags(), &config, &old, Some("http://x/v1")).is_none());
        assert_eq!(
            endpoint_note(&unset, &config, &recorded, Some("http://127.0.0.1:1/v1")),
            None
        );
        let moved = flags("openai", Some("http://127.0.0.1:2/v1"));
        let switched =
            endpoint_note(&moved, &config, &recorded, Some("http://127.0.0.1:2/v1")).unwrap();
        assert!(switched.ends_with("(--base-url)"), "{switched}");
        let mut configured = Config::default();
        configured.openai.base_url = Some("http://127.0.0.1:3/v1".to_owned());
        let kept = endpoint_note(
            &unset,
            &configured,
            &recorded,
            Some("http://127.0.0.1:1/v1"),
        )
        .unwrap();
        assert!(
            kept.contains("not [openai] base_url http://127.0.0.1:3/v1"),
            "{kept}"
        );
    }
}
