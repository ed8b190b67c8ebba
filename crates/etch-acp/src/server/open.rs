//! Opening ACP sessions: `session/new`, `session/load` and
//! `session/resume` through the runtime's session service, the replay of
//! a loaded session, and what a session offers the editor (the model
//! option, slash commands and skills); `session/list`, a project's
//! sessions from its index. It must not know where lines come from or
//! go to.

use etch_runtime::service::{Local, Scope};

use super::{
    Approver, Arc, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, Context,
    EditorAsker, Error, HashMap, Live, LoadSessionRequest, LoadSessionResponse, McpServer,
    NewSessionRequest, NewSessionResponse, Notice, Output, Path, Server, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionHandle, SessionUpdate, Sink,
    Spec, Stored, UnstructuredCommandInput, Updates, Value, catalog, params, rpc, unknown_stored,
};

impl Server {
    /// Opens a session in `cwd` with the editor's MCP `servers`
    /// (`resume`: an existing one by id).
    pub(super) async fn open(
        &mut self,
        cwd: &Path,
        servers: &[McpServer],
        resume: Option<&str>,
    ) -> Result<(String, etch_protocol::Replay), Error> {
        let method = if resume.is_some() {
            "session/load"
        } else {
            "session/new"
        };
        check_cwd(method, cwd)?;
        let (mut place, warnings) = (self.options.place_for)(cwd).map_err(rpc::internal)?;
        // A session to load is named by its whole id: its file, looked
        // up before anything starts.
        let stored = match resume {
            Some(id) => match catalog::file_of(&place.session_dir, id) {
                Some(file) => Some((id, file)),
                None => {
                    return Err(unknown_stored(
                        id,
                        "no session of this directory has exactly this id",
                    ));
                }
            },
            None => None,
        };
        let configured: Vec<String> = place
            .config
            .mcp_servers
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let given = crate::mcp::entries(servers, &configured)
            .map_err(|why| rpc::invalid_params(method, &why))?;
        place.config.mcp_servers.extend(given);
        for warning in warnings {
            (self.options.notify)(Notice::warning(warning));
        }
        let settings = self.options.settings.clone();
        let configured = place.config.provider.model.clone();
        let asker = Arc::new(EditorAsker::new(self.asks.clone()));
        let mode = Arc::new(crate::mode::ModeApprover::for_editor(
            &place.config,
            asker.clone(),
        ));
        let gate: Arc<dyn Approver> = mode.clone();
        let context = Context::build_gated(&place, &settings, Some(&gate))
            .map_err(|e| rpc::internal(e.to_string()))?;
        for diagnostic in &context.assembled.diagnostics {
            (self.options.notify)(Notice::warning(diagnostic.clone()));
        }
        let skills: Vec<(String, String)> = context
            .assembled
            .skills
            .iter()
            .map(|s| (s.name.clone(), s.description.clone()))
            .collect();
        let spec = Spec {
            place,
            settings,
            context: context.clone(),
        };
        let (handle, replay, notices) = self.serve_session(spec, stored).await?;
        for notice in notices {
            (self.options.notify)(notice);
        }
        let id = handle.id();
        asker.name_session(&id);
        self.sessions.insert(
            id.clone(),
            Live {
                handle,
                context,
                updates: Updates::new(cwd.to_path_buf()),
                turn: None,
                pending: HashMap::new(),
                skills,
                configured,
                mode,
            },
        );
        Ok((id, replay))
    }

    /// Creates a session (`stored` none) or opens the stored one, and
    /// serves it with outputs tagged by its id; a loaded session comes
    /// with its replay.
    async fn serve_session(
        &mut self,
        spec: Spec,
        stored: Option<(&str, std::path::PathBuf)>,
    ) -> Result<(Local, etch_protocol::Replay, Vec<Notice>), Error> {
        let (sink, tag) = self.tagged_sink();
        let Some((id, file)) = stored else {
            // The id is known once the session exists: its outputs are
            // tagged through a slot filled right after.
            let (handle, notices) = self
                .service
                .create(spec, None, "acp session".to_owned(), sink)
                .await
                .map_err(|e| rpc::internal(e.to_string()))?;
            tag(handle.id());
            return Ok((handle, etch_protocol::Replay::default(), notices));
        };
        tag(id.to_owned());
        let opened = self
            .service
            .open(spec, Stored::Path(&file), Scope::WHOLE, sink)
            .await
            .map_err(|e| match e {
                etch_runtime::OpenError::Resolve(_) => unknown_stored(id, &e.to_string()),
                other => rpc::internal(format!("cannot open session {id}: {other}")),
            })?;
        // The file's own header must name the id asked for (a copied or
        // renamed file does not).
        if opened.handle.id() != id {
            let _ = self.service.close(&opened.handle.id()).await;
            return Err(unknown_stored(id, "no session has exactly this id"));
        }
        Ok((opened.handle, opened.replay, opened.notices))
    }

    /// A sink tagging each output with a session id, and the setter of
    /// that id (a new session's id is known once it exists).
    pub(super) fn tagged_sink(&self) -> (Sink, impl FnOnce(String) + use<>) {
        let outputs = self.outputs.clone();
        let tag: Arc<std::sync::OnceLock<String>> = Arc::default();
        let set = Arc::clone(&tag);
        let sink: Sink = Arc::new(move |output: Output| {
            let id = tag.get().cloned().unwrap_or_default();
            let _ = outputs.send((id, output));
        });
        (sink, move |id: String| {
            let _ = set.set(id);
        })
    }

    /// `session/new`.
    pub(super) async fn new_session(&mut self, raw: Value) -> Result<Value, Error> {
        let request: NewSessionRequest = params("session/new", raw)?;
        let (id, _) = self.open(&request.cwd, &request.mcp_servers, None).await?;
        let response = NewSessionResponse::new(id.clone())
            .config_options(self.config_options(&id))
            .modes(self.modes(&id));
        self.announce.push(id);
        rpc::to_value(&response)
    }

    /// `session/resume`: the session opened to go on, its history not
    /// told again (the editor has it).
    pub(super) async fn resume_session(&mut self, raw: Value) -> Result<Value, Error> {
        let request: agent_client_protocol_schema::v1::ResumeSessionRequest =
            params("session/resume", raw)?;
        let wanted = request.session_id.0.to_string();
        if !self.sessions.contains_key(&wanted) {
            self.open(&request.cwd, &request.mcp_servers, Some(&wanted))
                .await?;
        }
        self.announce.push(wanted.clone());
        rpc::to_value(
            &agent_client_protocol_schema::v1::ResumeSessionResponse::new()
                .config_options(self.config_options(&wanted))
                .modes(self.modes(&wanted)),
        )
    }

    /// `session/list`: the top-level sessions of `cwd`'s project (else of
    /// the directory etch was started in), newest first, 50 a page; the
    /// cursor is where the next page starts.
    pub(super) fn list_sessions(&mut self, raw: Value) -> Result<Value, Error> {
        /// Sessions in one answer.
        const PAGE: usize = 50;
        let request: agent_client_protocol_schema::v1::ListSessionsRequest =
            params("session/list", raw)?;
        let cwd = match &request.cwd {
            Some(cwd) => {
                check_cwd("session/list", cwd)?;
                cwd.clone()
            }
            None => std::env::current_dir().map_err(|e| rpc::internal(e.to_string()))?,
        };
        let start = match request.cursor.as_deref() {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                rpc::invalid_params(
                    "session/list",
                    &format!("cursor {cursor:?} is not one this agent gave; start without one"),
                )
            })?,
        };
        let (place, _) = (self.options.place_for)(&cwd).map_err(rpc::internal)?;
        let wanted = cwd.to_string_lossy();
        let mut listed: Vec<etch_protocol::SessionSummary> = catalog::sessions(&place.session_dir)
            .into_iter()
            .filter(|s| s.parent.is_none() && (request.cwd.is_none() || s.cwd == wanted))
            .collect();
        listed.reverse();
        let page: Vec<agent_client_protocol_schema::v1::SessionInfo> = listed
            .iter()
            .skip(start)
            .take(PAGE)
            .map(|s| {
                let updated = std::fs::metadata(&s.path)
                    .and_then(|m| m.modified())
                    .ok()
                    .map_or_else(
                        || s.created_at.clone(),
                        |t| {
                            chrono::DateTime::<chrono::Utc>::from(t)
                                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                        },
                    );
                agent_client_protocol_schema::v1::SessionInfo::new(s.id.clone(), s.cwd.clone())
                    .title((!s.title.is_empty()).then(|| s.title.clone()))
                    .updated_at(updated)
            })
            .collect();
        let end = start.saturating_add(PAGE);
        let next = (end < listed.len()).then(|| end.to_string());
        rpc::to_value(
            &agent_client_protocol_schema::v1::ListSessionsResponse::new(page).next_cursor(next),
        )
    }

    /// `session/load`: the session told again as updates, then the answer.
    pub(super) async fn load_session(&mut self, raw: Value) -> Result<Value, Error> {
        let request: LoadSessionRequest = params("session/load", raw)?;
        let wanted = request.session_id.0.to_string();
        // A session already open here is told again from its own log: it
        // holds the log's lock, so it cannot be opened a second time.
        let (id, replay) = if let Some(live) = self.sessions.get_mut(&wanted) {
            if live.turn.is_some() {
                return Err(rpc::internal(format!(
                    "session {wanted} is running a prompt; cancel it (session/cancel) before loading it again"
                )));
            }
            let replay = live
                .handle
                .replay(Scope::WHOLE)
                .await
                .map_err(rpc::internal)?;
            live.updates = Updates::new(request.cwd.clone());
            (wanted, replay)
        } else {
            self.open(&request.cwd, &request.mcp_servers, Some(&wanted))
                .await?
        };
        let updates = match self.sessions.get_mut(&id) {
            Some(live) => crate::replay::replay(&replay, &mut live.updates),
            None => Vec::new(),
        };
        for update in updates {
            self.update(&id, update);
        }
        self.announce.push(id.clone());
        rpc::to_value(
            &LoadSessionResponse::new()
                .config_options(self.config_options(&id))
                .modes(self.modes(&id)),
        )
    }

    /// The session's modes, its own chosen.
    pub(super) fn modes(
        &self,
        id: &str,
    ) -> Option<agent_client_protocol_schema::v1::SessionModeState> {
        self.sessions
            .get(id)
            .map(|live| crate::mode::state(live.mode.mode()))
    }

    /// `session/set_mode`: the session's approval policy from now on.
    pub(super) fn set_mode(&mut self, raw: Value) -> Result<Value, Error> {
        let request: agent_client_protocol_schema::v1::SetSessionModeRequest =
            params("session/set_mode", raw)?;
        let id = request.session_id.0.to_string();
        let Some(live) = self.sessions.get(&id) else {
            return Err(super::unknown_session(&id));
        };
        live.mode
            .set(&request.mode_id.0)
            .map_err(|why| rpc::invalid_params("session/set_mode", &why))?;
        let current = live.mode.mode();
        self.update(
            &id,
            SessionUpdate::CurrentModeUpdate(
                agent_client_protocol_schema::v1::CurrentModeUpdate::new(current.to_owned()),
            ),
        );
        rpc::to_value(&agent_client_protocol_schema::v1::SetSessionModeResponse::new())
    }

    /// The session's configuration options: the model.
    pub(super) fn config_options(&self, id: &str) -> Vec<SessionConfigOption> {
        let Some(live) = self.sessions.get(id) else {
            return Vec::new();
        };
        let state = live.host_state();
        let current = state.1.clone();
        let mut models = vec![current.clone()];
        for known in &state.2 {
            if !models.contains(known) {
                models.push(known.clone());
            }
        }
        let options: Vec<SessionConfigSelectOption> = models
            .iter()
            .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
            .collect();
        vec![
            SessionConfigOption::select("model", "Model", current, options)
                .category(SessionConfigOptionCategory::Model)
                .description(format!("The {} model etch asks", state.0)),
        ]
    }

    /// Sends the slash commands and skills session `id` offers.
    pub(super) fn announce_commands(&self, id: &str) {
        let Some(live) = self.sessions.get(id) else {
            return;
        };
        let mut commands = vec![
            AvailableCommand::new(
                "compact",
                "Summarize the conversation so far to free context",
            )
            .input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new("what the summary should keep (optional)"),
            )),
        ];
        for (name, description) in &live.skills {
            commands.push(
                AvailableCommand::new(format!("skill:{name}"), description.clone()).input(
                    AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                        "what to do with the skill",
                    )),
                ),
            );
        }
        self.update(
            id,
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
        );
    }
}

/// Refuses a `cwd` that is not an absolute path to a directory.
fn check_cwd(method: &str, cwd: &Path) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(rpc::invalid_params(
            method,
            &format!("cwd {} is not an absolute path", cwd.display()),
        ));
    }
    if !cwd.is_dir() {
        return Err(rpc::invalid_params(
            method,
            &format!("cwd {} is not a directory", cwd.display()),
        ));
    }
    Ok(())
}
