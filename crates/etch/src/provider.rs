//! Provider selection for the command line: the run flags become the
//! runtime's typed [`ProviderFlags`], the factory in `etch-runtime` picks
//! the client, and this module prints the notes and header line it returns
//! on stderr and maps its errors to exit codes (a usage error is 2).
//!
//! `ETCH_ECHO_DELAY_MS`, `ETCH_IDLE_TIMEOUT_SECS` and
//! `ETCH_RETRY_BASE_DELAY_MS` are read by the factory (test knobs).

use etch_runtime::{ProviderFlags, SelectError};

pub use etch_runtime::Selection;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};

/// The provider options of `args`, as the runtime takes them.
pub fn flags(args: &RunArgs) -> ProviderFlags {
    ProviderFlags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        api_key: args.api_key.clone(),
        openai_api: args.openai_api.clone(),
        openai_transport: args.openai_transport.clone(),
        reasoning_effort: args.reasoning_effort.clone(),
        reasoning_summary: args.reasoning_summary.clone(),
        no_retry: false,
    }
}

/// The exit code and message of a failed selection.
fn failure(err: SelectError) -> Failure {
    match err {
        SelectError::Usage(message) => Failure::usage(message),
        SelectError::Failed(message) => Failure::new(exit::FAILED, anyhow::anyhow!(message)),
        unfamiliar @ SelectError::Unfamiliar(_) => Failure::usage(unfamiliar.to_string()),
    }
}

/// Picks the client for continuing `session` and prints its notes (a
/// switched endpoint first) and header line.
pub async fn select_for_session(
    args: &RunArgs,
    place: &etch_runtime::Place,
    session: &etch_session::LoadedSession,
) -> Result<Selection, Failure> {
    let known = etch_runtime::endpoints::KnownEndpoints::load(place.home.as_deref());
    let selection = etch_runtime::select_for_session(&flags(args), &place.config, session, &known)
        .await
        .map_err(failure)?;
    for note in &selection.notes {
        diag!("{note}");
    }
    if let Some(notice) = &selection.notice {
        diag!("{notice}");
    }
    Ok(selection)
}
