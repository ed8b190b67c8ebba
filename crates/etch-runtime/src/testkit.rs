//! Unit-test fixtures: a session on disk and an agent on the offline echo
//! model, so runtime pieces are tested on real runs.

use std::path::Path;
use std::sync::Arc;

use etch_core::{Agent, AgentConfig};
use etch_session::store::NewSession;
use etch_session::{SessionStore, SessionWriter};

/// A new session log in the session directory `dir`, started on the echo
/// provider with `model` and titled `first_prompt`.
pub(crate) fn new_log(dir: &Path, model: &str, first_prompt: &str) -> SessionWriter {
    SessionStore::new(dir)
        .create(&NewSession {
            cwd: "/w".into(),
            provider: "echo".into(),
            model: model.into(),
            openai_api: None,
            base_url: None,
            etch_version: "0".into(),
            first_prompt: first_prompt.into(),
        })
        .unwrap()
        .0
}

/// A new session in `dir` and an echo agent working there.
pub(crate) fn echo_run(dir: &Path) -> (SessionWriter, Agent) {
    let writer = new_log(&dir.join("sessions"), "echo", "test");
    let agent = Agent::new(
        Arc::new(etch_provider::EchoClient::new("echo")),
        etch_tool::ToolRegistry::new(),
        AgentConfig {
            max_tool_rounds: 8,
            system: Vec::new(),
            cwd: dir.to_path_buf(),
            temp_dir: dir.join("tmp"),
            options: etch_model::RequestOptions::default(),
            compaction: None,
            guard: etch_core::GuardSettings::default(),
            grounding: false,
            required_reply_tokens: None,
        },
    );
    (writer, agent)
}

/// A new session on the echo model with the default tools, in `dir`
/// (which is its working directory too).
pub(crate) async fn echo_session(dir: &Path) -> crate::Session {
    let place = crate::Place {
        cwd: dir.to_path_buf(),
        session_dir: dir.join("sessions"),
        home: None,
        config: etch_config::Config::default(),
    };
    let settings = crate::RunSettings {
        provider: crate::ProviderFlags {
            provider: Some("echo".into()),
            ..crate::ProviderFlags::default()
        },
        ..crate::RunSettings::default()
    };
    let context = crate::Context::build(&place, &settings).unwrap();
    crate::Session::create(place, settings, context, "test".into(), &mut |_| {})
        .await
        .unwrap()
        .0
}

/// Runs `future` to completion on a current-thread runtime.
pub(crate) fn block<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}
