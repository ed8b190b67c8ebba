//! Which provider, model, endpoint and reasoning effort a session's next
//! request uses: what `session.started` recorded, overridden by the latest
//! `model.change` and `thinking_level.change` events on the active branch
//! (so switching on one branch does not leak into another). It must not
//! know how a client is built from it.

use crate::event::{ModelChangeData, ThinkingLevelData, types};
use crate::loader::LoadedSession;

/// The model settings in force at the leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelState {
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// OpenAI API shape, if recorded.
    pub openai_api: Option<String>,
    /// Endpoint base URL, if recorded.
    pub base_url: Option<String>,
    /// Reasoning effort, if a change set one.
    pub thinking_level: Option<String>,
}

/// The settings at the active leaf of `session`.
pub fn model_state(session: &LoadedSession) -> ModelState {
    let header = &session.header;
    let mut state = ModelState {
        provider: header.provider.clone(),
        model: header.model.clone(),
        openai_api: header.openai_api.clone(),
        base_url: header.base_url.clone(),
        thinking_level: None,
    };
    for event in session.active_events() {
        match event.kind.as_str() {
            types::MODEL_CHANGE => {
                if let Ok(change) = event.parse_data::<ModelChangeData>() {
                    state.provider = change.provider;
                    state.model = change.model;
                    state.openai_api = change.openai_api;
                    state.base_url = change.base_url;
                }
            }
            types::THINKING_LEVEL_CHANGE => {
                if let Ok(change) = event.parse_data::<ThinkingLevelData>() {
                    state.thinking_level = Some(change.level);
                }
            }
            _ => {}
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_session;
    use crate::testlines::{header, line};
    use std::path::Path;

    /// The header applies until a change on the branch; a change on an
    /// abandoned branch does not count.
    #[test]
    fn latest_change_on_the_branch_wins() {
        let text = [
            header(),
            line(
                "model.change",
                "B",
                Some("A"),
                r#"{"provider":"openai","model":"m-abandoned"}"#,
            ),
            line(
                "model.change",
                "C",
                Some("A"),
                r#"{"provider":"openai","model":"m2","openaiApi":"responses","baseUrl":"http://h/v1"}"#,
            ),
            line("thinking_level.change", "D", Some("C"), r#"{"level":"high"}"#),
        ]
        .join("\n");
        let session = parse_session(Path::new("t"), text.as_bytes()).unwrap();
        let state = model_state(&session);
        assert_eq!(state.model, "m2");
        assert_eq!(state.openai_api.as_deref(), Some("responses"));
        assert_eq!(state.base_url.as_deref(), Some("http://h/v1"));
        assert_eq!(state.thinking_level.as_deref(), Some("high"));
        let only_header = parse_session(Path::new("t"), header().as_bytes()).unwrap();
        assert_eq!(model_state(&only_header).model, "echo");
    }
}
