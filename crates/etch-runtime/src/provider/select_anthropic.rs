//! Choosing the Anthropic Messages client (C29): its endpoint, which key
//! it may send there (`ANTHROPIC_API_KEY` only to Anthropic's own service
//! unless the user's `[anthropic] auth` says otherwise) and the thinking
//! budget an effort asks for. Part of the provider factory (see the
//! parent module); it must not know front ends.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The Anthropic Messages provider (C29).
pub(super) fn anthropic_client(
    args: &ProviderFlags,
    model: Option<&str>,
    knobs: &Knobs,
) -> Result<Selection, SelectError> {
    let base_url = checked_url(
        args.base_url
            .clone()
            .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string()),
    )?;
    let (key, label) = anthropic_key(args, &base_url, knobs)?;
    if !key.is_empty() {
        refuse_cleartext(&base_url, "your Anthropic API key", knobs)?;
    }
    let model = model.unwrap_or(anthropic::DEFAULT_MODEL).to_string();
    // Thinking costs tokens on every pass, so Anthropic thinks only when the
    // user asks for an effort explicitly.
    let budget = args
        .reasoning_effort
        .as_deref()
        .and_then(anthropic::thinking_budget);
    let notice = format!("etch: anthropic messages · {model} · {base_url} · {label}");
    Ok(Selection {
        endpoint: Some(base_url.clone()),
        notes: Vec::new(),
        client: Arc::new(AnthropicClient::new(AnthropicConfig {
            base_url,
            api_key: key,
            model,
            max_tokens: anthropic::DEFAULT_MAX_TOKENS,
            thinking_budget: budget,
            retry: knobs.retry.clone(),
            idle_timeout: knobs.idle_timeout,
            limits: knobs.limits,
        })),
        notice: Some(notice),
        auth: Some(label.clone()),
    })
}

/// The key an Anthropic endpoint gets and the header line's label for
/// it: `--api-key` always; `ANTHROPIC_API_KEY` only to Anthropic's own
/// API, unless `[anthropic] auth = "api-key"` (the user's own file) sends
/// it anywhere; `auth = "none"` sends none. An empty key sends no header.
pub(super) fn anthropic_key(
    args: &ProviderFlags,
    base_url: &str,
    knobs: &Knobs,
) -> Result<(String, String), SelectError> {
    if let Some(key) = &args.api_key {
        return Ok((key.clone(), "Anthropic: API key (--api-key)".to_owned()));
    }
    if knobs.anthropic_auth == "none" {
        return Ok((
            String::new(),
            "no API key ([anthropic] auth = \"none\")".to_owned(),
        ));
    }
    let host = etch_provider::http::host_of(base_url).unwrap_or_default();
    let own = host == ANTHROPIC_HOST || host.ends_with(".anthropic.com");
    match env(etch_auth::ENV_ANTHROPIC_API_KEY) {
        Some(key) if own || knobs.anthropic_auth == "api-key" => {
            Ok((key, "Anthropic: API key (ANTHROPIC_API_KEY)".to_owned()))
        }
        _ if own => Err(SelectError::Failed(
            "no Anthropic credentials: set ANTHROPIC_API_KEY or pass --api-key".to_owned(),
        )),
        _ => Ok((
            String::new(),
            "no API key (ANTHROPIC_API_KEY goes only to api.anthropic.com; \
             [anthropic] auth = \"api-key\" sends it here)"
                .to_owned(),
        )),
    }
}

/// Anthropic's API host, the home of `ANTHROPIC_API_KEY`.
pub(super) const ANTHROPIC_HOST: &str = "api.anthropic.com";
