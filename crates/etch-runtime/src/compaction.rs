//! Manual compaction of a session's log (`/compact`, RPC `compact`,
//! `etch compact`): the settings a request asks for (forced: even a short
//! session, keeping only the last turn) and the compaction hooks around
//! the summary, the same for an open [`Session`](crate::Session) and for
//! `etch compact` on a session file. It must not know who asked or how
//! the outcome is shown.

use etch_compact::{CompactError, Outcome, Trigger};
use etch_config::Config;
use etch_model::ModelClient;
use etch_session::{LoadedSession, SessionWriter};
use tokio_util::sync::CancellationToken;

use crate::context::compact_settings;
use crate::hooks::SessionHooks;

/// What one manual compaction works with besides the log.
pub struct Manual<'a> {
    /// The summarizer.
    pub client: &'a dyn ModelClient,
    /// The configuration (`[context]` settings).
    pub config: &'a Config,
    /// The session's compaction hooks, if any.
    pub hooks: Option<&'a SessionHooks>,
    /// The user's focus instructions.
    pub focus: Option<&'a str>,
    /// Asked for explicitly: compacts even a short session.
    pub force: bool,
}

/// Compacts `loaded` through `writer` (open on the same file) with trigger
/// `manual`; every line appended besides the summary (hook runs, what the
/// summary request cost) goes to `on_line`. A failure leaves the log as
/// it was.
pub async fn manual(
    loaded: &LoadedSession,
    writer: &mut SessionWriter,
    manual: &Manual<'_>,
    cancel: &CancellationToken,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<Outcome, CompactError> {
    let settings = etch_compact::Settings {
        force: manual.force,
        ..compact_settings(manual.config)
    };
    etch_core::compact_session(
        loaded,
        writer,
        &etch_core::Compaction {
            client: manual.client,
            trigger: Trigger::Manual,
            focus: manual.focus,
            settings: &settings,
            intercept: manual.hooks.map(|h| h as &dyn etch_core::Intercept),
        },
        cancel,
        on_line,
    )
    .await
}
