//! Moving through a session's tree: navigating to another point (with a
//! summary of the branch left behind), forking before an earlier prompt,
//! and a fresh session run like this one. Part of [`Session`].

use std::sync::Arc;

use etch_model::Message;
use etch_session::writer::Appended;
use etch_session::{SessionError, SessionStore, SessionWriter, types};
use tokio_util::sync::CancellationToken;

use super::{Session, first_user_text, new_session};
use crate::error::OpenError;
use crate::provider::Selection;

impl Session {
    /// Moves the leaf to the event `target` (the next prompt starts a new
    /// branch there) and projects the history at it. With `summarize`,
    /// the branch left behind is summarized first (P-TREE-05; a failed
    /// summary leaves the log unchanged) and the summary is appended after
    /// the move as `context.branch_summary`, which later requests see as a
    /// user message (P-DATA-07). Nothing left behind means no summary.
    pub async fn navigate(
        &mut self,
        target: &str,
        summarize: bool,
        cancel: &CancellationToken,
    ) -> Result<Navigated, NavigateError> {
        let loaded = self.load()?;
        let target = &etch_session::tree::resolve_event(&loaded, target)?;
        let left: Vec<Message> = match etch_session::tree::left_behind(&loaded, target) {
            Some(events) if summarize => etch_session::project_path(&events).messages,
            Some(_) => Vec::new(),
            None => {
                return Err(NavigateError::Session(SessionError::UnknownEvent {
                    path: loaded.path.clone(),
                    id: target.to_owned(),
                }));
            }
        };
        let mut spent = etch_compact::Spent::default();
        let summary = if left.is_empty() {
            None
        } else {
            Some(
                self.summarize_branch(left, target, cancel, &mut spent)
                    .await?,
            )
        };
        let from = self.writer.leaf().map(str::to_owned);
        let appended = etch_session::navigate(&loaded, &mut self.writer, target)?;
        let mut counted = Vec::new();
        if let (Some(summary), Some(from_id)) = (&summary, from) {
            self.writer.append(
                types::CONTEXT_BRANCH_SUMMARY,
                &etch_session::BranchSummaryData {
                    summary: summary.clone(),
                    from_id,
                },
            )?;
            counted = spent.record(&mut self.writer, etch_compact::PURPOSE_BRANCH_SUMMARY)?;
        }
        self.reproject()?;
        Ok(Navigated {
            event_id: appended.id,
            summary,
            counted,
        })
    }

    /// Asks the model to summarize `messages`, a branch being left for
    /// the event `target`.
    async fn summarize_branch(
        &self,
        messages: Vec<Message>,
        target: &str,
        cancel: &CancellationToken,
        spent: &mut etch_compact::Spent,
    ) -> Result<String, etch_compact::CompactError> {
        /// What the summarizer is told about the branch.
        const FOCUS: &str = "This branch is being left: the conversation goes back to an earlier point and continues from there. \
             Summarize what was tried on this branch, what was learned, and which files were changed, \
             so that the work can go on from the earlier point without repeating it.";
        let plan = etch_compact::Plan {
            first_kept_event_id: target.to_owned(),
            summarized: messages,
            previous_summary: None,
            tokens_before: 0,
            tokens_kept: 0,
            read_files: Vec::new(),
            modified_files: Vec::new(),
        };
        etch_compact::summarize_counted(
            self.selection.client.as_ref(),
            &plan,
            Some(FOCUS),
            self.id(),
            cancel,
            spent,
        )
        .await
    }

    /// A new session holding this one's branch before the event `before`
    /// (its `session.started` names this file and the event), with the
    /// same client, tools and prompt. This session is not changed. Also
    /// returns the text of `before` when it is a user message, so a client
    /// can put it back into its editor (Pi's fork).
    /// Its `SessionStart` hooks run with reason `new`.
    pub async fn fork(&self, before: &str) -> Result<(Self, Option<String>), OpenError> {
        let loaded = self.load()?;
        let before = &etch_session::tree::resolve_event(&loaded, before)?;
        let title = first_user_text(&loaded).unwrap_or_else(|| "fork".to_owned());
        let store = SessionStore::new(&self.place.session_dir);
        let (writer, _) = store.fork(
            &loaded,
            before,
            &new_session(&self.place, &self.selection, title),
        )?;
        let text = loaded
            .events
            .iter()
            .find(|e| e.id == *before && e.kind == types::MESSAGE_USER)
            .and_then(|e| e.parse_data::<etch_session::UserData>().ok())
            .map(|data| etch_model::content::joined_text(&data.content));
        let mut forked = self.sibling(writer);
        forked.reproject()?;
        forked.started("new", None).await?;
        Ok((forked, text))
    }

    /// A new session holding a copy of the active branch, leaf included
    /// (Pi's `clone`), with this one's client, tools and prompt.
    pub async fn clone_branch(&self) -> Result<Self, OpenError> {
        let loaded = self.load()?;
        let title = first_user_text(&loaded).unwrap_or_else(|| "clone".to_owned());
        let store = SessionStore::new(&self.place.session_dir);
        let (writer, _) =
            store.clone_branch(&loaded, &new_session(&self.place, &self.selection, title))?;
        let mut cloned = self.sibling(writer);
        cloned.reproject()?;
        cloned.started("new", None).await?;
        Ok(cloned)
    }

    /// A new empty session with this one's client, tools and prompt; its
    /// `SessionStart` hooks run with reason `new`.
    pub async fn fresh(&self, title: String) -> Result<(Self, Appended), OpenError> {
        let store = SessionStore::new(&self.place.session_dir);
        let (writer, first) = store.create(&new_session(&self.place, &self.selection, title))?;
        let mut fresh = self.sibling(writer);
        fresh.started("new", None).await?;
        Ok((fresh, first))
    }

    /// Another session file run like this one (same client, tools and
    /// prompt), with an empty history.
    fn sibling(&self, mut writer: SessionWriter) -> Self {
        writer.set_tap(self.writer.tap());
        Self {
            place: self.place.clone(),
            settings: self.settings.clone(),
            context: self.context.clone(),
            selection: Selection {
                client: Arc::clone(&self.selection.client),
                notice: None,
                notes: Vec::new(),
                endpoint: self.selection.endpoint.clone(),
                auth: self.selection.auth.clone(),
            },
            writer,
            history: Vec::new(),
            unsent: Vec::new(),
            switch: Arc::new(etch_core::ClientSwitch::new()),
        }
    }
}

/// What a navigation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Navigated {
    /// The id of the `session.navigate` event.
    pub event_id: String,
    /// The summary of the branch left behind, when one was written.
    pub summary: Option<String>,
    /// The lines of what the summary request cost (`model.usage`,
    /// `model.metrics`), written after the summary, for front ends'
    /// counters.
    pub counted: Vec<String>,
}

/// Why a navigation did not happen; the log is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum NavigateError {
    /// The log could not be read or written, or has no such event.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The summary of the branch left behind failed.
    #[error(
        "the summary of the branch being left failed: {0}; navigate without \"summarize\" to move anyway"
    )]
    Summary(#[from] etch_compact::CompactError),
}
