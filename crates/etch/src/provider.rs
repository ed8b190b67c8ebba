//! Choosing the model client from flags and the environment (C42, E-AUTH-03).
//!
//! `--provider` wins; without it, etch picks `openai` when an OpenAI
//! credential is available (`--api-key`, `OPENAI_API_KEY`,
//! `OPENROUTER_API_KEY`) and otherwise runs the offline `echo` model, saying
//! so on stderr. Credentials come only from the flag and the environment,
//! and are never printed.
//!
//! `ETCH_ECHO_DELAY_MS` makes the echo model wait before replying,
//! `ETCH_IDLE_TIMEOUT_SECS` sets the stalled-stream timeout (default 300)
//! and `ETCH_RETRY_BASE_DELAY_MS` the first retry delay (default 2000); they
//! let tests exercise interruption, stalls and retries quickly, until the
//! configuration file carries the same settings.

use std::sync::Arc;
use std::time::Duration;

use etch_auth::{AuthInputs, AuthMode, CredentialStore, Secret, oauth, resolve_mode};
use etch_model::{ErrorKind, ModelClient, ModelError};
use etch_provider::EchoClient;
use etch_provider::anthropic::{self, AnthropicClient, AnthropicConfig};
use etch_provider::http::{CredentialSource, DEFAULT_IDLE_TIMEOUT, HeadersFuture, RetryPolicy};
use etch_provider::openai::chat::{ChatClient, ChatConfig};
use etch_provider::openai::responses::{ResponsesClient, ResponsesConfig};
use etch_provider::openai::responses_ws::Transport;

use etch_config::Config;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};

/// Every provider name the `--provider` flag accepts.
pub const PROVIDERS: [&str; 3] = ["echo", "openai", "anthropic"];

/// The exact stderr line when no credentials are found (C42).
pub const NO_CREDENTIALS: &str = "etch: no model credentials found; using the offline echo model (see 'etch auth login' or set OPENAI_API_KEY)";

/// Default OpenAI base URL (E-CFG-10).
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Default model of the openai provider (E-CFG-09).
const OPENAI_MODEL: &str = "gpt-5.5";

/// UI label of API-key auth (E-AUTH-07, G17).
pub const LABEL_API_KEY: &str = "OpenAI: Platform API key";

/// A chosen client plus lines for stderr.
pub struct Selection {
    /// The client.
    pub client: Arc<dyn ModelClient>,
    /// One line to print on stderr before the run, if any.
    pub notice: Option<String>,
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

/// The OpenAI auth mode of E-AUTH-03, with the inputs it was resolved from.
fn openai_auth(args: &RunArgs) -> (Option<AuthMode>, AuthInputs) {
    let stored = credential_store().is_some_and(|s| s.exists());
    let inputs = AuthInputs::from_env(args.api_key.clone().map(Secret::from), stored, env);
    (resolve_mode(&inputs), inputs)
}

/// Picks the provider for continuing `session` (the provider and model it
/// was started with, unless a flag says otherwise) and prints the header
/// line on stderr.
pub async fn select_for_session(
    args: &RunArgs,
    config: &Config,
    session: &etch_session::LoadedSession,
) -> Result<Selection, Failure> {
    let header = &session.header;
    let selection = select(
        args,
        config,
        Some((header.provider.as_str(), header.model.as_str())),
    )
    .await?;
    if let Some(notice) = &selection.notice {
        eprintln!("{notice}");
    }
    Ok(selection)
}

/// Settings from the configuration that no flag carries.
struct Knobs {
    /// Retry policy (`[provider] max_retries`, `retry_base_delay_ms`).
    retry: RetryPolicy,
    /// `[openai] stream_usage` (G19).
    stream_usage: bool,
    /// Whether `--openai-transport` was given (a WebSocket transport with
    /// Chat Completions is then a usage error rather than a warning).
    transport_flag: bool,
    /// `--base-url` as given. The ChatGPT/Codex login goes only to the
    /// Codex backend or to a URL named on the command line, never to an
    /// `[openai] base_url` meant for API keys (a token must not leak to a
    /// configured third-party or local server).
    flag_base_url: Option<String>,
}

/// Picks the provider for a run. Precedence (E-CFG-03): flags, then for a
/// resumed session the provider and model it was started with (`recorded`),
/// then the configuration, then auto-selection from credentials (C42).
pub async fn select(
    args: &RunArgs,
    config: &Config,
    recorded: Option<(&str, &str)>,
) -> Result<Selection, Failure> {
    let provider = args
        .provider
        .as_deref()
        .or(recorded.map(|r| r.0))
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
        .or(recorded.map(|r| r.1))
        .or(configured_model);
    let knobs = Knobs {
        retry: retry_policy(config),
        stream_usage: config.openai.stream_usage,
        transport_flag: args.openai_transport.is_some(),
        flag_base_url: args.base_url.clone(),
    };
    let openai_args = with_openai_config(args, config);
    match provider {
        Some("echo") => Ok(echo(model, None)),
        Some("openai") => openai(&openai_args, model, &knobs).await,
        Some("anthropic") => anthropic_client(args, model, &knobs),
        Some(other) => Err(Failure::usage(format!(
            "unknown provider \"{other}\": expected one of {}",
            PROVIDERS.join(", ")
        ))),
        None if openai_auth(args).0.is_some() => openai(&openai_args, model, &knobs).await,
        None if env("ANTHROPIC_API_KEY").is_some() => anthropic_client(args, model, &knobs),
        None => Ok(echo(model, Some(NO_CREDENTIALS.to_string()))),
    }
}

/// The run flags with `[openai]` settings filling what no flag gave. Only
/// the OpenAI provider reads the result, so `[openai]` never affects
/// Anthropic (whose thinking budget comes from the flag alone).
fn with_openai_config(args: &RunArgs, config: &Config) -> RunArgs {
    let openai = &config.openai;
    let mut merged = args.clone();
    merged.base_url = args.base_url.clone().or_else(|| openai.base_url.clone());
    merged.openai_api = args.openai_api.clone().or_else(|| Some(openai.api.clone()));
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

/// Idle timeout, with `ETCH_IDLE_TIMEOUT_SECS` applied.
fn idle_timeout() -> Duration {
    env("ETCH_IDLE_TIMEOUT_SECS")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_IDLE_TIMEOUT, Duration::from_secs)
}

/// The reasoning effort in force: the flag, else `minimal` (E-CFG-10);
/// `off` means none at all (C35).
fn reasoning_effort(args: &RunArgs) -> Option<String> {
    let effort = args.reasoning_effort.as_deref().unwrap_or("minimal");
    (effort != "off").then(|| effort.to_string())
}

/// The Anthropic Messages provider (C29).
fn anthropic_client(
    args: &RunArgs,
    model: Option<&str>,
    knobs: &Knobs,
) -> Result<Selection, Failure> {
    let Some(key) = args.api_key.clone().or_else(|| env("ANTHROPIC_API_KEY")) else {
        return Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!("no Anthropic credentials: set ANTHROPIC_API_KEY or pass --api-key"),
        ));
    };
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string());
    let model = model.unwrap_or(anthropic::DEFAULT_MODEL).to_string();
    // Thinking costs tokens on every pass, so Anthropic thinks only when the
    // user asks for an effort explicitly.
    let budget = args
        .reasoning_effort
        .as_deref()
        .and_then(anthropic::thinking_budget);
    let notice = format!("etch: anthropic messages · {model} · {base_url} · Anthropic: API key");
    Ok(Selection {
        client: Arc::new(AnthropicClient::new(AnthropicConfig {
            base_url,
            api_key: key,
            model,
            max_tokens: anthropic::DEFAULT_MAX_TOKENS,
            thinking_budget: budget,
            retry: knobs.retry.clone(),
            idle_timeout: idle_timeout(),
        })),
        notice: Some(notice),
    })
}

/// The OpenAI provider: Chat Completions or Responses with an API key, or
/// Responses on the Codex backend with a ChatGPT/Codex login or token.
async fn openai(args: &RunArgs, model: Option<&str>, knobs: &Knobs) -> Result<Selection, Failure> {
    let (mode, inputs) = openai_auth(args);
    let model_name = model.unwrap_or(OPENAI_MODEL).to_string();
    let (bearer, credentials): (Option<String>, Option<Arc<dyn CredentialSource>>) = match mode {
        None => {
            return Err(Failure::new(
                exit::FAILED,
                anyhow::anyhow!(
                    "no OpenAI credentials: run 'etch auth login', set OPENAI_API_KEY (or OPENROUTER_API_KEY) \
                     or pass --api-key; local servers that need no key take --api-key unused"
                ),
            ));
        }
        Some(AuthMode::OpenAiApiKey { .. }) => {
            return api_key_client(args, model_name, &inputs, knobs);
        }
        Some(AuthMode::CodexOAuth) => {
            let Some(store) = credential_store() else {
                return Err(Failure::new(
                    exit::FAILED,
                    anyhow::anyhow!("HOME is not set"),
                ));
            };
            let login = CodexLogin {
                store,
                issuer: oauth::issuer_from_env(),
            };
            // Fail before the session starts if the login cannot be used;
            // every request then checks (and refreshes) it again.
            oauth::ensure_fresh(&login.store, &login.issuer)
                .await
                .map_err(|e| Failure::new(exit::FAILED, e))?;
            (None, Some(Arc::new(login)))
        }
        Some(AuthMode::CodexToken) => (
            inputs
                .secret_for(AuthMode::CodexToken)
                .map(|s| s.expose().to_string()),
            None,
        ),
    };
    let label = mode.map_or("", AuthMode::label);
    let base_url = knobs
        .flag_base_url
        .clone()
        .unwrap_or_else(|| CODEX_BASE_URL.to_string());
    let transport = transport(args);
    let notice = format!(
        "etch: openai responses{} · {model_name} · {base_url} · {label}",
        transport_label(transport)
    );
    Ok(Selection {
        client: Arc::new(ResponsesClient::new(ResponsesConfig {
            base_url,
            bearer,
            model: model_name,
            reasoning_effort: reasoning_effort(args),
            reasoning_summary: Some(
                args.reasoning_summary
                    .clone()
                    .unwrap_or_else(|| "auto".to_string()),
            ),
            extra_headers: Vec::new(),
            credentials,
            retry: knobs.retry.clone(),
            idle_timeout: idle_timeout(),
            transport,
            websocket_headers: vec![("OpenAI-Beta".to_string(), CODEX_WEBSOCKET_BETA.to_string())],
        })),
        notice: Some(notice),
    })
}

/// The stored ChatGPT/Codex login as a per-request credential source: each
/// request loads it, refreshes it when it is about to expire (P-AUTH-01,
/// E-AUTH-11) and sends the access token and the account header.
struct CodexLogin {
    /// The credential file.
    store: CredentialStore,
    /// The OAuth issuer for refreshes.
    issuer: String,
}

impl CredentialSource for CodexLogin {
    fn headers(&self) -> HeadersFuture<'_> {
        Box::pin(async move {
            let creds = oauth::ensure_fresh(&self.store, &self.issuer)
                .await
                .map_err(|e| ModelError::new(ErrorKind::Auth, e.to_string()))?;
            let mut headers = vec![(
                "authorization".to_string(),
                format!("Bearer {}", creds.access_token.expose()),
            )];
            if let Some(account) = creds.account_id {
                headers.push(("chatgpt-account-id".to_string(), account));
            }
            Ok(headers)
        })
    }
}

/// The `OpenAI-Beta` value the ChatGPT/Codex backend expects on a Responses
/// WebSocket handshake.
const CODEX_WEBSOCKET_BETA: &str = "responses_websockets=2026-02-06";

/// The Responses transport of `--openai-transport` (default `sse`).
fn transport(args: &RunArgs) -> Transport {
    args.openai_transport
        .as_deref()
        .and_then(Transport::parse)
        .unwrap_or_default()
}

/// How the stderr header names a non-default transport.
fn transport_label(transport: Transport) -> &'static str {
    match transport {
        Transport::Sse => "",
        Transport::WebSocket => " (websocket)",
        Transport::Auto => " (websocket, sse fallback)",
    }
}

/// An API-key client: Chat Completions by default, Responses on request.
/// A WebSocket transport needs Responses, so asking for it with Chat
/// Completions is a usage error rather than a silently ignored flag.
fn api_key_client(
    args: &RunArgs,
    model: String,
    inputs: &AuthInputs,
    knobs: &Knobs,
) -> Result<Selection, Failure> {
    let mode = resolve_mode(inputs);
    let key = mode
        .and_then(|m| inputs.secret_for(m))
        .map(|s| s.expose().to_string())
        .unwrap_or_default();
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| OPENAI_BASE_URL.to_string());
    let api = args.openai_api.as_deref().unwrap_or("chat");
    let mut transport = transport(args);
    if api == "chat" && transport != Transport::Sse {
        let mode = args.openai_transport.as_deref().unwrap_or_default();
        if knobs.transport_flag {
            return Err(Failure::usage(format!(
                "--openai-transport {mode} needs the Responses API: add --openai-api responses"
            )));
        }
        eprintln!(
            "etch: warning: [openai] transport = \"{mode}\" needs api = \"responses\"; using sse with Chat Completions"
        );
        transport = Transport::Sse;
    }
    let notice = format!(
        "etch: openai {api}{} · {model} · {base_url} · {LABEL_API_KEY}",
        transport_label(transport)
    );
    let client: Arc<dyn ModelClient> = if api == "responses" {
        Arc::new(ResponsesClient::new(ResponsesConfig {
            base_url,
            bearer: Some(key),
            model,
            reasoning_effort: reasoning_effort(args),
            reasoning_summary: Some(
                args.reasoning_summary
                    .clone()
                    .unwrap_or_else(|| "auto".to_string()),
            ),
            extra_headers: Vec::new(),
            credentials: None,
            retry: knobs.retry.clone(),
            idle_timeout: idle_timeout(),
            transport,
            websocket_headers: Vec::new(),
        }))
    } else {
        Arc::new(ChatClient::new(ChatConfig {
            base_url,
            api_key: Some(key),
            model,
            stream_usage: knobs.stream_usage,
            retry: knobs.retry.clone(),
            idle_timeout: idle_timeout(),
        }))
    };
    Ok(Selection {
        client,
        notice: Some(notice),
    })
}
