//! The commands the host answers itself, quickly: queries (state,
//! messages, counters, export), which read the log on disk while a task
//! holds the session, and the changes that need the idle session (model,
//! reasoning effort, fork, a new or another session).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::PoisonError;

use etch_core::NoopObserver;
use etch_protocol::{CommandBody, EventBody, QueueMode, ThinkingLevel};
use etch_session::load_session;
use serde_json::{Value, json};

use super::{Answer, Host};
use crate::session::{Session, Target};

impl Host {
    /// The answer to `get_state`.
    pub(super) fn state(&self) -> Value {
        let queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let (steering, follow_up) = match queues.update_event() {
            EventBody::QueueUpdate {
                steering,
                follow_up,
            } => (steering, follow_up),
            _ => (Vec::new(), Vec::new()),
        };
        let modes = (queues.steering_mode(), queues.follow_up_mode());
        drop(queues);
        let s = &self.snapshot;
        let messages = self
            .session
            .as_ref()
            .map_or(s.messages, |session| session.history().len());
        json!({
            "provider": s.provider,
            // Pi's shape: the model as an object.
            "model": { "provider": s.provider, "id": s.model, "name": s.model },
            "thinkingLevel": s.thinking,
            "isStreaming": self.running.is_some(),
            "isCompacting": self.running.as_ref().is_some_and(|r| r.job == super::Job::Command("compact")),
            "steeringMode": mode_name(modes.0),
            "followUpMode": mode_name(modes.1),
            "sessionId": s.id,
            "sessionFile": s.path,
            "messageCount": messages,
            "pendingMessageCount": steering.len() + follow_up.len(),
            "autoCompactionEnabled": s.auto_compact,
            "steering": steering,
            "followUp": follow_up,
            // Calls waiting for an `approve`, for a client that connected
            // after their `approval_request` went out.
            "approvals": s.approvals.waiting(&s.id).into_iter().map(|a| json!({
                "toolCallId": a.call_id,
                "toolName": a.tool,
                "args": a.args,
                "reason": a.why,
            })).collect::<Vec<_>>(),
        })
    }

    /// The messages of the active branch in the wire shape: the session's
    /// history when idle, the log's projection while a run appends to it.
    pub(super) fn messages(&self) -> Result<Value, String> {
        match &self.session {
            Some(session) => Ok(crate::service::catalog::messages_of(session.history())),
            None => crate::service::catalog::messages(&self.snapshot.path),
        }
    }

    /// The answer to `get_fork_messages`: each user message of the active
    /// branch, oldest first, with the event id `fork` takes.
    pub(super) fn fork_messages(&self) -> Result<Value, String> {
        let loaded = load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
        let messages: Vec<Value> = loaded
            .active_events()
            .filter(|e| e.kind == etch_session::types::MESSAGE_USER)
            .filter_map(|e| {
                let data = e.parse_data::<etch_session::UserData>().ok()?;
                Some(json!({
                    "entryId": e.id,
                    "text": etch_model::content::joined_text(&data.content),
                }))
            })
            .collect();
        Ok(json!({ "messages": messages }))
    }

    /// Writes the transcript to `output_path`, or beside the session file,
    /// as `format` says (else as the path's extension says, else the plain
    /// transcript). HTML always escapes what came from the session: a
    /// `<script>` in a model's answer must not run in a browser.
    pub(super) fn export(
        &self,
        output_path: Option<&str>,
        format: Option<&str>,
    ) -> Result<Option<Value>, String> {
        let by_extension =
            output_path.and_then(|p| crate::transcript::format_of(std::path::Path::new(p)));
        let format = match format.or(by_extension).unwrap_or("md") {
            f @ ("html" | "md" | "jsonl") => f,
            other => {
                return Err(format!(
                    "unknown export format \"{other}\": use html, md or jsonl"
                ));
            }
        };
        let loaded = load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
        let text = match format {
            "html" => match &self.html {
                Some(render) => render(&crate::projection::replay(&loaded)),
                None => crate::transcript::html(&loaded),
            },
            "jsonl" => std::fs::read_to_string(&self.snapshot.path)
                .map_err(|e| format!("cannot read {}: {e}", self.snapshot.path.display()))?,
            _ => crate::transcript::render(&loaded),
        };
        let path = match output_path {
            Some(path) => PathBuf::from(path),
            None => self.snapshot.path.with_extension(match format {
                "html" => "html",
                "jsonl" => "copy.jsonl",
                _ => "txt",
            }),
        };
        std::fs::write(&path, text).map_err(|e| {
            format!(
                "cannot write the transcript to {}: {e}; pass another outputPath",
                path.display()
            )
        })?;
        Ok(Some(json!({ "path": path })))
    }

    /// The session's counters, read from its log.
    pub(super) fn stats(&self) -> Answer {
        let loaded = load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
        let stats = etch_session::session_stats(&loaded);
        let mut value = serde_json::to_value(&stats).map_err(|e| e.to_string())?;
        // Pi's fields beside etch's own, for Pi's clients.
        let count = |kind: &str| loaded.active_events().filter(|e| e.kind == kind).count();
        let (users, answers, results) = (
            count(etch_session::types::MESSAGE_USER),
            count(etch_session::types::MESSAGE_ASSISTANT),
            count(etch_session::types::MESSAGE_TOOL),
        );
        let usage = &stats.usage;
        if let Some(object) = value.as_object_mut() {
            object.insert("sessionFile".to_owned(), json!(self.snapshot.path));
            object.insert("userMessages".to_owned(), json!(users));
            object.insert("assistantMessages".to_owned(), json!(answers));
            object.insert("toolResults".to_owned(), json!(results));
            object.insert("totalMessages".to_owned(), json!(users + answers + results));
            object.insert(
                "tokens".to_owned(),
                json!({
                    "input": usage.input_tokens.saturating_sub(usage.cached_input_tokens),
                    "output": usage.output_tokens,
                    "cacheRead": usage.cached_input_tokens,
                    "cacheWrite": 0,
                    "total": usage.total_tokens,
                }),
            );
            object.entry("cost").or_insert(json!(0));
        }
        Ok(Some(value))
    }

    /// The answer to `get_last_assistant_text`: the text of the active
    /// branch's last assistant message (null when none has text).
    pub(super) fn last_assistant_text(&self) -> Answer {
        let loaded = load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
        let text = loaded
            .active_events()
            .filter(|e| e.kind == etch_session::types::MESSAGE_ASSISTANT)
            .filter_map(|e| e.parse_data::<etch_session::AssistantData>().ok())
            .map(|d| etch_model::content::joined_text(&d.content))
            .filter(|text| !text.trim().is_empty())
            .last();
        Ok(Some(json!({ "text": text })))
    }

    /// The answer to `set_session_name`: the name as stored in the index
    /// (a run may go on meanwhile; the name is the index's, not the log's).
    pub(super) fn set_name(&self, name: &str) -> Answer {
        let name = name.trim();
        if name.is_empty() {
            return Err("Session name cannot be empty".to_owned());
        }
        let dir = self
            .snapshot
            .path
            .parent()
            .ok_or_else(|| format!("{} has no directory", self.snapshot.path.display()))?;
        crate::service::catalog::rename(dir, &self.snapshot.id, name)
            .map(|stored| Some(json!({ "name": stored })))
            .map_err(|e| e.to_string())
    }

    /// The answer to `get_available_models`: the current model first, then
    /// the others the provider's server lists (only the current one when
    /// it lists none or cannot be reached).
    pub(super) async fn available_models(&mut self) -> Value {
        let client = Arc::clone(&self.snapshot.client);
        let mut ids = vec![client.model().to_owned()];
        for model in self.server_models(&client).await {
            if !ids.contains(&model) {
                ids.push(model);
            }
        }
        let models: Vec<Value> = ids
            .iter()
            .map(|id| json!({ "provider": client.provider(), "id": id, "name": id }))
            .collect();
        json!({ "models": models })
    }

    /// The models `client`'s server lists, asked at most every
    /// [`super::MODELS_TTL`] per client (none when it cannot be asked).
    pub(super) async fn server_models(
        &mut self,
        client: &Arc<dyn etch_model::ModelClient>,
    ) -> Vec<String> {
        if let Some((cached, at, models)) = &self.models
            && Arc::ptr_eq(cached, client)
            && at.elapsed() < super::MODELS_TTL
        {
            return models.clone();
        }
        match client.list_models().await {
            Ok(models) => {
                let now = std::time::Instant::now();
                self.models = Some((Arc::clone(client), now, models.clone()));
                models
            }
            Err(_) => Vec::new(),
        }
    }

    /// The answer to `get_commands`: each skill a prompt can invoke
    /// (`/skill:NAME`), in Pi's shape, with the file it comes from.
    pub(super) fn commands(&self) -> Value {
        let commands: Vec<Value> = self
            .snapshot
            .skills
            .iter()
            .map(|(name, description, location, users)| {
                json!({
                    "name": format!("skill:{name}"),
                    "description": description,
                    "source": "skill",
                    "sourceInfo": {
                        "path": location,
                        "source": "local",
                        "scope": if *users { "user" } else { "project" },
                        "origin": "top-level",
                    },
                })
            })
            .collect();
        json!({ "commands": commands })
    }

    /// Commands that need the session itself (so only when idle). Returns
    /// the session to keep (another one after fork, new_session and
    /// switch_session) with the answer.
    pub(super) async fn idle_command(
        &mut self,
        mut session: Session,
        id: Option<String>,
        body: CommandBody,
    ) -> (Session, Result<Option<Value>, String>) {
        let answer = match body {
            CommandBody::SetModel { provider, model_id } => {
                let mut flags = session.settings().provider.clone();
                let current = session.selection().client.provider().to_owned();
                flags.switch_model(&provider, &model_id, &current);
                self.reconfigure(&mut session, id.clone(), flags).await
            }
            CommandBody::CycleThinkingLevel => {
                const CYCLE: [ThinkingLevel; 6] = [
                    ThinkingLevel::Off,
                    ThinkingLevel::Minimal,
                    ThinkingLevel::Low,
                    ThinkingLevel::Medium,
                    ThinkingLevel::High,
                    ThinkingLevel::Xhigh,
                ];
                let mut flags = session.settings().provider.clone();
                let current = flags.reasoning_effort.as_deref().unwrap_or("off");
                let at = CYCLE.iter().position(|l| level_name(*l) == current);
                let next = CYCLE[at.map_or(0, |i| (i + 1) % CYCLE.len())];
                flags.reasoning_effort = Some(level_name(next).to_owned());
                self.reconfigure(&mut session, id.clone(), flags)
                    .await
                    .map(|_| Some(json!({ "level": level_name(next) })))
            }
            CommandBody::CycleModel => {
                let client = std::sync::Arc::clone(&session.selection().client);
                let (provider, current) = (client.provider().to_owned(), client.model().to_owned());
                let mut models = self.server_models(&client).await;
                if !models.contains(&current) {
                    models.insert(0, current.clone());
                }
                if models.len() < 2 {
                    Ok(None)
                } else {
                    let at = models.iter().position(|m| *m == current).unwrap_or(0);
                    let next = models[(at + 1) % models.len()].clone();
                    let mut flags = session.settings().provider.clone();
                    flags.switch_model(&provider, &next, &provider);
                    match self.reconfigure(&mut session, id.clone(), flags).await {
                        Ok(_) => Ok(Some(json!({
                            "model": { "provider": provider, "id": next, "name": next },
                            "thinkingLevel": session.settings().provider.reasoning_effort,
                            "isScoped": false,
                        }))),
                        Err(e) => Err(e),
                    }
                }
            }
            CommandBody::SetThinkingLevel { level } => {
                let mut flags = session.settings().provider.clone();
                flags.reasoning_effort = Some(level_name(level).to_owned());
                self.reconfigure(&mut session, id.clone(), flags).await
            }
            CommandBody::SetAutoRetry { enabled } => {
                let mut flags = session.settings().provider.clone();
                flags.no_retry = !enabled;
                self.reconfigure(&mut session, id.clone(), flags)
                    .await
                    .map(|_| Some(json!({ "enabled": enabled })))
            }
            CommandBody::SetAutoCompaction { enabled } => {
                session.set_auto_compact(enabled);
                Ok(Some(json!({ "enabled": enabled })))
            }
            CommandBody::Clone => match session.clone_branch().await {
                Ok(cloned) => {
                    self.end_processes(&mut session).await;
                    session = cloned;
                    Ok(Some(json!({
                        "cancelled": false,
                        "sessionId": session.id(),
                        "sessionFile": session.path(),
                    })))
                }
                Err(e) => Err(e.to_string()),
            },
            CommandBody::Fork { entry_id } => match session.fork(&entry_id).await {
                Ok((forked, text)) => {
                    self.end_processes(&mut session).await;
                    session = forked;
                    Ok(Some(json!({
                        "sessionId": session.id(),
                        "sessionFile": session.path(),
                        "text": text,
                        "cancelled": false,
                    })))
                }
                Err(err) => Err(err.to_string()),
            },
            CommandBody::NewSession { parent_session } => {
                let title = parent_session.map_or_else(
                    || "new session".to_owned(),
                    |parent| format!("new session after {parent}"),
                );
                match session.fresh(title).await {
                    Ok((fresh, _)) => {
                        self.end_processes(&mut session).await;
                        session = fresh;
                        Ok(Some(
                            json!({ "sessionId": session.id(), "sessionFile": session.path(), "cancelled": false }),
                        ))
                    }
                    Err(err) => Err(err.to_string()),
                }
            }
            CommandBody::SwitchSession { session_path } => {
                let path = PathBuf::from(&session_path);
                if same_file(&path, session.path()) {
                    Ok(Some(
                        json!({ "sessionId": session.id(), "sessionFile": session.path(), "cancelled": false }),
                    ))
                } else {
                    match self.switch(&session, id.clone(), &path).await {
                        Ok(other) => {
                            self.end_processes(&mut session).await;
                            session = other;
                            Ok(Some(
                                json!({ "sessionId": session.id(), "sessionFile": session.path(), "cancelled": false }),
                            ))
                        }
                        Err(err) => Err(err),
                    }
                }
            }
            other => Err(format!(
                "{} is answered elsewhere; this is a bug in etch",
                other.name()
            )),
        };
        let switched = session.id() != self.snapshot.id;
        self.look_at(&session);
        if switched {
            self.emit(id, self.session_info());
        }
        (session, answer)
    }

    /// Opens the session file at `path` with the current session's
    /// settings; the current session stays open when that fails.
    async fn switch(
        &self,
        current: &Session,
        id: Option<String>,
        path: &std::path::Path,
    ) -> Result<Session, String> {
        if !path.is_file() {
            return Err(format!(
                "no session file at {}; pass the sessionFile of a session (see etch sessions)",
                path.display()
            ));
        }
        let mut notices = Vec::new();
        let opened = Session::open(
            current.place().clone(),
            current.settings().clone(),
            current.context().clone(),
            Target::Path(path),
            &mut |notice| notices.push(notice),
            &mut NoopObserver,
        )
        .await;
        for notice in &notices {
            self.notice(id.clone(), notice);
        }
        opened.map_err(|e| e.to_string())
    }

    /// Switches the client (model or reasoning effort), announcing it.
    async fn reconfigure(
        &self,
        session: &mut Session,
        id: Option<String>,
        flags: crate::provider::ProviderFlags,
    ) -> Result<Option<Value>, String> {
        let mut notices = Vec::new();
        let before = {
            let client = &session.selection().client;
            (client.provider().to_owned(), client.model().to_owned())
        };
        let level_before = session.settings().provider.reasoning_effort.clone();
        let result = session
            .reconfigure(flags, &mut |n| notices.push(n), &mut NoopObserver)
            .await;
        for notice in &notices {
            self.notice(id.clone(), notice);
        }
        result.map_err(|e| e.to_string())?;
        let client = &session.selection().client;
        // Only what changed is announced: `/thinking` is no model change.
        if (client.provider(), client.model()) != (before.0.as_str(), before.1.as_str()) {
            self.emit(
                id.clone(),
                EventBody::ModelChanged {
                    provider: client.provider().to_owned(),
                    model: client.model().to_owned(),
                },
            );
        }
        let level = session.settings().provider.reasoning_effort.clone();
        if level != level_before
            && let Some(level) = level.as_deref().and_then(level_from_name)
        {
            self.emit(id, EventBody::ThinkingLevelChanged { level });
        }
        Ok(Some(json!({
            "provider": client.provider(),
            "model": client.model(),
            // Pi's `set_model` answers the model as {provider, id}.
            "id": client.model(),
            "thinkingLevel": level,
        })))
    }
}

/// The wire name of a queue mode.
fn mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

/// The reasoning effort name of a thinking level.
pub(super) fn level_name(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off => "off",
        ThinkingLevel::None => "none",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh => "xhigh",
    }
}

/// The thinking level of a reasoning effort name, if it is one.
pub(super) fn level_from_name(name: &str) -> Option<ThinkingLevel> {
    serde_json::from_value(Value::String(name.to_owned())).ok()
}

/// Whether `a` and `b` name the same file, however they are written.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The protocol's thinking levels are exactly the configuration's
    /// reasoning efforts (its one list), both ways, and every effort but
    /// `none` and `off` gives Anthropic a thinking budget.
    #[test]
    fn thinking_levels_agree_with_the_efforts() {
        let levels = [
            ThinkingLevel::Off,
            ThinkingLevel::None,
            ThinkingLevel::Minimal,
            ThinkingLevel::Low,
            ThinkingLevel::Medium,
            ThinkingLevel::High,
            ThinkingLevel::Xhigh,
        ];
        let mut names: Vec<&str> = levels.into_iter().map(level_name).collect();
        for name in &names {
            assert_eq!(level_from_name(name).map(level_name), Some(*name));
        }
        let mut efforts = etch_config::REASONING_EFFORTS.to_vec();
        names.sort_unstable();
        efforts.sort_unstable();
        assert_eq!(names, efforts);
        for effort in etch_config::REASONING_EFFORTS {
            let budget = etch_provider::anthropic::thinking_budget(effort);
            assert_eq!(
                budget.is_some(),
                !["none", "off"].contains(effort),
                "{effort}"
            );
        }
    }
}
