//! Moving the active leaf of a session to an earlier event: the next
//! prompt continues the conversation from there, on a new branch, and the
//! old branch stays in the log. The move is itself an event
//! (`session.navigate`, child of the target), because etch's rule is that
//! the leaf is the last valid line: without it the move would be lost when
//! the process ends. Summarizing the branch being left (`branch_summary`)
//! belongs to the runtime, which has the summarizer. This module must not
//! know about models.

use crate::error::SessionError;
use crate::event::{NavigateData, types};
use crate::loader::LoadedSession;
use crate::writer::{Appended, SessionWriter};

/// Moves the leaf of `writer`'s session (loaded as `loaded`) to the event
/// `target` and records the move; fails naming the id when the session
/// has no such event.
pub fn navigate(
    loaded: &LoadedSession,
    writer: &mut SessionWriter,
    target: &str,
) -> Result<Appended, SessionError> {
    if !loaded.events.iter().any(|e| e.id == target) {
        return Err(SessionError::UnknownEvent {
            path: loaded.path.clone(),
            id: target.to_owned(),
        });
    }
    let from = writer.leaf().map(str::to_owned);
    writer.set_leaf(target.to_owned());
    writer.append(
        types::SESSION_NAVIGATE,
        &NavigateData {
            target_id: target.to_owned(),
            from_id: from,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::UserData;
    use crate::store::{NewSession, SessionStore};
    use crate::{load_session, project_messages, tree};
    use etch_model::{ContentPart, Message};

    /// Appends a user message.
    fn user(writer: &mut SessionWriter, text: &str) -> String {
        writer
            .append(
                types::MESSAGE_USER,
                &UserData {
                    content: vec![ContentPart::text(text)],
                },
            )
            .unwrap()
            .id
    }

    /// After navigating back, the projection is the branch up to the
    /// target, the next message starts a new branch beside the old one,
    /// and all of it holds after reloading from disk. An unknown id is an
    /// error naming it, and nothing is written.
    #[test]
    fn navigate_then_continue_on_a_new_branch() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let (mut writer, _) = store
            .create(&NewSession {
                cwd: "/w".into(),
                provider: "echo".into(),
                model: "echo".into(),
                openai_api: None,
                base_url: None,
                etch_version: "0".into(),
                first_prompt: "p".into(),
            })
            .unwrap();
        let first = user(&mut writer, "first");
        user(&mut writer, "old idea");
        let loaded = load_session(writer.path()).unwrap();
        let err = navigate(&loaded, &mut writer, "NOPE").unwrap_err();
        assert!(err.to_string().contains("has no event NOPE"), "{err}");
        navigate(&loaded, &mut writer, &first).unwrap();
        let reloaded = load_session(writer.path()).unwrap();
        assert_eq!(
            project_messages(&reloaded).messages,
            vec![Message::user_text("first")]
        );
        user(&mut writer, "new idea");
        let reloaded = load_session(writer.path()).unwrap();
        assert_eq!(
            project_messages(&reloaded).messages,
            vec![Message::user_text("first"), Message::user_text("new idea")]
        );
        let first_index = reloaded.events.iter().position(|e| e.id == first).unwrap();
        assert_eq!(tree::children(&reloaded)[first_index].len(), 2);
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
    }
}
