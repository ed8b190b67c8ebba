//! Choosing an OpenAI client: the stored ChatGPT/Codex login (Responses
//! on chatgpt.com, its token refreshed per request) or an API key (Chat
//! Completions or Responses on any OpenAI-compatible endpoint), which key
//! may go where, and the transport. Part of the provider factory (see the
//! parent module); it must not know front ends.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Whether `url` is one of OpenAI's own services (the API or the Codex
/// backend), where OpenAI credentials belong.
pub(super) fn is_openai_service(url: &str) -> bool {
    etch_provider::http::host_of(url).is_some_and(|h| h == OPENAI_HOST || is_chatgpt(&h))
}

/// Whether `host` is the ChatGPT/Codex backend's.
pub(super) fn is_chatgpt(host: &str) -> bool {
    host == "chatgpt.com" || host.ends_with(".chatgpt.com")
}

/// The OpenAI provider: Chat Completions or Responses with an API key, or
/// Responses on the Codex backend with a ChatGPT/Codex login or token, or
/// no credentials at all for a server of the user's own (E-AUTH-03 and
/// `[openai] auth`).
pub(super) async fn openai(
    args: &ProviderFlags,
    model: Option<&str>,
    knobs: &Knobs,
) -> Result<Selection, SelectError> {
    let model_name = model.unwrap_or(OPENAI_MODEL).to_string();
    let base_url = checked_url(
        args.base_url
            .clone()
            .unwrap_or_else(|| OPENAI_BASE_URL.to_string()),
    )?;
    if args.api_key.is_some() {
        return api_key_client(args, model_name, base_url, Key::Flag, knobs);
    }
    if knobs.auth == "none" {
        return api_key_client(
            args,
            model_name,
            base_url,
            Key::None("[openai] auth = \"none\""),
            knobs,
        );
    }
    let (mode, inputs) = openai_auth(args);
    // The ChatGPT login and CODEX_ACCESS_TOKEN go only to OpenAI's own
    // services, or anywhere with `[openai] auth = "login"` (a proxy of the
    // Codex backend; honoured from the user's own config only). Any other
    // server gets no credentials unless `auth = "api-key"` or --api-key
    // says so.
    let codex_here = is_openai_service(&base_url) || knobs.auth == "login";
    match mode {
        None if is_openai_service(&base_url) => Err(SelectError::Failed(
            "no OpenAI credentials: run 'etch auth login', set OPENAI_API_KEY (or OPENROUTER_API_KEY \
             with --base-url https://openrouter.ai/api/v1) or pass --api-key"
                .to_owned(),
        )),
        None => api_key_client(
            args,
            model_name,
            base_url,
            Key::None("no credentials"),
            knobs,
        ),
        Some(AuthMode::OpenAiApiKey { .. }) => {
            let key = env_key(&inputs, &base_url, knobs)?;
            api_key_client(args, model_name, base_url, key, knobs)
        }
        Some(AuthMode::CodexOAuth | AuthMode::CodexToken) if !codex_here => {
            // Keys in the environment may still belong to this endpoint.
            let key = env_key(&inputs, &base_url, knobs)?;
            api_key_client(args, model_name, base_url, key, knobs)
        }
        Some(mode @ (AuthMode::CodexOAuth | AuthMode::CodexToken)) => {
            codex_client(args, model_name, mode, &inputs, knobs).await
        }
    }
}

/// The credential an API-key client sends.
pub(super) enum Key {
    /// `--api-key`.
    Flag,
    /// A key from the environment, named by its variable.
    Env(&'static str, String),
    /// No `Authorization` header, and why (for the stderr header line).
    None(&'static str),
}

/// The environment key that may go to `base_url`: with `[openai] auth =
/// "api-key"` the first one set, otherwise only a key whose own service
/// `base_url` is. No key at all for other servers; OpenAI's API with no
/// key of its own is an error that says which variable is missing.
pub(super) fn env_key(
    inputs: &AuthInputs,
    base_url: &str,
    knobs: &Knobs,
) -> Result<Key, SelectError> {
    let openai = inputs
        .openai_api_key
        .as_ref()
        .map(|s| s.expose().to_string());
    let openrouter = inputs
        .openrouter_api_key
        .as_ref()
        .map(|s| s.expose().to_string());
    if knobs.auth == "api-key" {
        return Ok(match (openai, openrouter) {
            (Some(key), _) => Key::Env(ENV_OPENAI_API_KEY, key),
            (None, Some(key)) => Key::Env(ENV_OPENROUTER_API_KEY, key),
            (None, None) => Key::None("no key in the environment"),
        });
    }
    let host = etch_provider::http::host_of(base_url).unwrap_or_default();
    if host == OPENAI_HOST {
        return openai.map(|k| Key::Env(ENV_OPENAI_API_KEY, k)).ok_or_else(|| {
            SelectError::Failed(format!(
                    "no OpenAI credentials for {base_url}: OPENROUTER_API_KEY goes only to openrouter.ai \
                     (pass --base-url https://openrouter.ai/api/v1); set OPENAI_API_KEY or pass --api-key"
                ),
            )
        });
    }
    if (host == OPENROUTER_HOST || host.ends_with(".openrouter.ai"))
        && let Some(key) = openrouter
    {
        return Ok(Key::Env(ENV_OPENROUTER_API_KEY, key));
    }
    Ok(Key::None(
        "environment keys go only to their own service; [openai] auth = \"api-key\" sends them here",
    ))
}

/// Responses on the Codex backend (or a `--base-url` proxy of it) with the
/// stored ChatGPT login or `CODEX_ACCESS_TOKEN`.
pub(super) async fn codex_client(
    args: &ProviderFlags,
    model_name: String,
    mode: AuthMode,
    inputs: &AuthInputs,
    knobs: &Knobs,
) -> Result<Selection, SelectError> {
    let (bearer, credentials): (Option<String>, Option<Arc<dyn CredentialSource>>) = if mode
        == AuthMode::CodexOAuth
    {
        let Some(store) = credential_store() else {
            return Err(SelectError::Failed(
                "HOME is not set: etch keeps the stored login under $HOME/.etch/auth".to_owned(),
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
            .map_err(|e| SelectError::Failed(e.to_string()))?;
        (None, Some(Arc::new(login)))
    } else {
        (
            inputs
                .secret_for(AuthMode::CodexToken)
                .map(|s| s.expose().to_string()),
            None,
        )
    };
    let label = mode.label();
    // The Codex backend unless a Codex host, or a proxy under `auth =
    // "login"`, was named (the API's default URL is not one).
    let base_url = args
        .base_url
        .clone()
        .filter(|url| {
            knobs.auth == "login"
                || etch_provider::http::host_of(url).is_some_and(|h| is_chatgpt(&h))
        })
        .unwrap_or_else(|| CODEX_BASE_URL.to_string());
    refuse_cleartext(&base_url, "your ChatGPT/Codex login", knobs)?;
    let transport = transport(args);
    let notice = format!(
        "etch: openai responses{} · {model_name} · {base_url} · {label}",
        transport_label(transport)
    );
    Ok(Selection {
        endpoint: Some(base_url.clone()),
        notes: Vec::new(),
        client: Arc::new(ResponsesClient::new(ResponsesConfig {
            base_url,
            bearer,
            model: model_name,
            reasoning_effort: reasoning_effort(args),
            reasoning_summary: Some(reasoning_summary(args)),
            extra_headers: Vec::new(),
            credentials,
            retry: knobs.retry.clone(),
            idle_timeout: knobs.idle_timeout,
            limits: knobs.limits,
            transport,
            websocket_headers: vec![("OpenAI-Beta".to_string(), CODEX_WEBSOCKET_BETA.to_string())],
        })),
        notice: Some(notice),
        auth: Some(label.to_string()),
    })
}

/// The stored ChatGPT/Codex login as a per-request credential source: each
/// request loads it, refreshes it when it is about to expire (P-AUTH-01,
/// E-AUTH-11) and sends the access token and the account header.
pub(super) struct CodexLogin {
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
pub(super) const CODEX_WEBSOCKET_BETA: &str = "responses_websockets=2026-02-06";

/// The Responses transport of `--openai-transport` (default `sse`).
pub(super) fn transport(args: &ProviderFlags) -> Transport {
    args.openai_transport
        .as_deref()
        .and_then(Transport::parse)
        .unwrap_or_default()
}

/// How the stderr header names a non-default transport.
pub(super) fn transport_label(transport: Transport) -> &'static str {
    match transport {
        Transport::Sse => "",
        Transport::WebSocket => " (websocket)",
        Transport::Auto => " (websocket, sse fallback)",
    }
}

/// An API-key client: Chat Completions by default, Responses on request,
/// sending `key` (or no `Authorization` header at all).
/// A WebSocket transport needs Responses, so asking for it with Chat
/// Completions is a usage error rather than a silently ignored flag.
pub(super) fn api_key_client(
    args: &ProviderFlags,
    model: String,
    base_url: String,
    key: Key,
    knobs: &Knobs,
) -> Result<Selection, SelectError> {
    let (key, label) = match key {
        Key::Flag => (args.api_key.clone(), format!("{LABEL_API_KEY} (--api-key)")),
        Key::Env(var, key) => (Some(key), format!("{LABEL_API_KEY} ({var})")),
        Key::None(why) => (None, format!("no API key ({why})")),
    };
    if key.is_some() {
        refuse_cleartext(&base_url, "your API key", knobs)?;
    }
    let api = args.openai_api.as_deref().unwrap_or("chat");
    let mut notes = Vec::new();
    let mut transport = transport(args);
    if api == "chat" && transport != Transport::Sse {
        let mode = args.openai_transport.as_deref().unwrap_or_default();
        if knobs.transport_flag {
            return Err(SelectError::Usage(format!(
                "--openai-transport {mode} needs the Responses API: add --openai-api responses"
            )));
        }
        notes.push(format!(
            "etch: warning: [openai] transport = \"{mode}\" needs api = \"responses\"; using sse with Chat Completions"
        ));
        transport = Transport::Sse;
    }
    let notice = format!(
        "etch: openai {api}{} · {model} · {base_url} · {label}",
        transport_label(transport)
    );
    let endpoint = Some(base_url.clone());
    let client: Arc<dyn ModelClient> = if api == "responses" {
        Arc::new(ResponsesClient::new(ResponsesConfig {
            base_url,
            bearer: key,
            model,
            reasoning_effort: reasoning_effort(args),
            reasoning_summary: Some(reasoning_summary(args)),
            extra_headers: Vec::new(),
            credentials: None,
            retry: knobs.retry.clone(),
            idle_timeout: knobs.idle_timeout,
            limits: knobs.limits,
            transport,
            websocket_headers: Vec::new(),
        }))
    } else {
        Arc::new(ChatClient::new(ChatConfig {
            base_url,
            api_key: key,
            model,
            stream_usage: knobs.stream_usage,
            retry: knobs.retry.clone(),
            idle_timeout: knobs.idle_timeout,
            limits: knobs.limits,
        }))
    };
    Ok(Selection {
        client,
        notice: Some(notice),
        notes,
        endpoint,
        auth: Some(label.clone()),
    })
}
