//! Choosing the model client from flags and the environment (C42).
//!
//! Only the offline `echo` provider is built into this version; the network
//! providers (`openai`, `anthropic`) are named here so the flag's vocabulary
//! and the auto-selection rule are already the final ones, and asking for
//! them gives a clear error rather than a silent fallback.
//!
//! `ETCH_ECHO_DELAY_MS` makes the echo model wait before replying; it exists
//! so tests can interrupt a live run without a network provider.

use std::sync::Arc;
use std::time::Duration;

use etch_model::ModelClient;
use etch_provider::EchoClient;

use crate::exit::Failure;

/// Every provider name the `--provider` flag accepts.
pub const PROVIDERS: [&str; 3] = ["echo", "openai", "anthropic"];

/// Credential variables that make `openai` the automatic choice (C42).
const OPENAI_CREDENTIALS: [&str; 3] =
    ["CODEX_ACCESS_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY"];

/// The exact stderr line when no credentials are found (C42).
pub const NO_CREDENTIALS: &str = "etch: no model credentials found; using the offline echo model (see 'etch auth login' or set OPENAI_API_KEY)";

/// A chosen client plus an optional notice for stderr.
pub struct Selection {
    /// The client.
    pub client: Arc<dyn ModelClient>,
    /// One line to print on stderr before the run, if any.
    pub notice: Option<String>,
}

/// Whether a non-empty environment variable is set.
fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Picks the provider named by `--provider`, or the automatic choice.
pub fn select(provider: Option<&str>, model: Option<&str>) -> Result<Selection, Failure> {
    let delay = std::env::var("ETCH_ECHO_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis);
    let echo = |notice| Selection {
        client: Arc::new(
            EchoClient::new(model.unwrap_or(etch_provider::echo::NAME)).with_delay(delay),
        ),
        notice,
    };
    match provider {
        Some("echo") => Ok(echo(None)),
        Some(name @ ("openai" | "anthropic")) => Err(Failure::usage(format!(
            "the {name} provider is not part of this build yet; use --provider echo"
        ))),
        Some(other) => Err(Failure::usage(format!(
            "unknown provider \"{other}\": expected one of {}",
            PROVIDERS.join(", ")
        ))),
        None => {
            let found: Vec<&str> = OPENAI_CREDENTIALS
                .iter()
                .chain(std::iter::once(&"ANTHROPIC_API_KEY"))
                .copied()
                .filter(|v| env_set(v))
                .collect();
            if found.is_empty() {
                Ok(echo(Some(NO_CREDENTIALS.to_string())))
            } else {
                Ok(echo(Some(format!(
                    "etch: found {} but no network provider is part of this build yet; using the offline echo model",
                    found.join(", ")
                ))))
            }
        }
    }
}
