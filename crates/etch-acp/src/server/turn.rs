//! A session's turns: `session/prompt` (slash commands and skills
//! included), the model option, `session/cancel`, the permission
//! questions of gated tools, and the host's outputs turned into updates
//! and answers. It must not know where lines come from or go to.

use super::{
    Ask, CancelNotification, Command, CommandBody, ConfigOptionUpdate, Error, EventBody, Output,
    Pending, PromptRequest, PromptResponse, RequestId, Response, Server, SessionHandle,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, Slash,
    StopReason, Turn, Value, WireMessage, chunk, compacted, params, prompt_text, rpc, slash,
    unknown_session,
};

impl Server {
    /// `session/prompt`: starts a run; answered when it ends.
    pub(super) fn prompt(&mut self, id: &RequestId, raw: Value) -> Option<Result<Value, Error>> {
        let request: PromptRequest = match params("session/prompt", raw) {
            Ok(request) => request,
            Err(e) => return Some(Err(e)),
        };
        let session = request.session_id.0.to_string();
        let (text, images) = match prompt_text(&request.prompt) {
            Ok(prompt) => prompt,
            Err(e) => return Some(Err(e)),
        };
        let command = self.command_id("prompt");
        let Some(live) = self.sessions.get_mut(&session) else {
            return Some(Err(unknown_session(&session)));
        };
        // A session still busy otherwise (compacting) refuses the prompt
        // in its response, which answers the request.
        if live.turn.is_some() {
            return Some(Err(rpc::internal(format!(
                "session {session} is already running a prompt; wait for its answer or send session/cancel"
            ))));
        }
        let body = match slash(&text, &live.skills) {
            Slash::Compact(focus) => {
                live.pending
                    .insert(command.clone(), Pending::Compact(id.clone(), false));
                CommandBody::Compact {
                    custom_instructions: focus,
                    force: false,
                }
            }
            Slash::Skill(name, rest) => match live.context.expand_skill(&name, &rest) {
                Ok(message) => {
                    live.pending.insert(command.clone(), Pending::Prompt);
                    CommandBody::Prompt {
                        message,
                        images,
                        streaming_behavior: None,
                    }
                }
                Err(e) => return Some(Err(rpc::invalid_params("session/prompt", &e))),
            },
            Slash::None => {
                live.pending.insert(command.clone(), Pending::Prompt);
                CommandBody::Prompt {
                    message: text,
                    images,
                    streaming_behavior: None,
                }
            }
        };
        if matches!(body, CommandBody::Prompt { .. }) {
            live.turn = Some(Turn {
                request: id.clone(),
                command: command.clone(),
                cancelled: false,
                max_tokens: false,
            });
        }
        live.handle.send(Command {
            id: Some(command),
            body,
        });
        None
    }

    /// `session/set_config_option`: the model.
    pub(super) fn set_config_option(
        &mut self,
        id: &RequestId,
        raw: Value,
    ) -> Option<Result<Value, Error>> {
        let request: SetSessionConfigOptionRequest = match params("session/set_config_option", raw)
        {
            Ok(request) => request,
            Err(e) => return Some(Err(e)),
        };
        let session = request.session_id.0.to_string();
        if request.config_id.0.as_ref() != "model" {
            return Some(Err(rpc::invalid_params(
                "session/set_config_option",
                &format!(
                    "there is no option {:?}; etch offers \"model\"",
                    request.config_id.0
                ),
            )));
        }
        let Some(model) = request.value.as_value_id().map(|v| v.0.to_string()) else {
            return Some(Err(rpc::invalid_params(
                "session/set_config_option",
                &"the model must be one of the option's values",
            )));
        };
        let command = self.command_id("model");
        let Some(live) = self.sessions.get_mut(&session) else {
            return Some(Err(unknown_session(&session)));
        };
        let provider = live.host_state().0;
        live.pending
            .insert(command.clone(), Pending::SetModel(id.clone()));
        live.handle.send(Command {
            id: Some(command),
            body: CommandBody::SetModel {
                provider,
                model_id: model,
            },
        });
        None
    }

    /// Handles a notification.
    pub(super) fn notification(&mut self, method: &str, raw: Value) {
        if method != "session/cancel" || !self.initialized {
            return;
        }
        let Ok(cancel) = serde_json::from_value::<CancelNotification>(raw) else {
            return;
        };
        let session = cancel.session_id.0.to_string();
        let command = self.command_id("abort");
        let Some(live) = self.sessions.get_mut(&session) else {
            return;
        };
        let compacting = live
            .pending
            .values()
            .any(|p| matches!(p, Pending::Compact(..)));
        if live.turn.is_none() && !compacting {
            return;
        }
        if let Some(turn) = &mut live.turn {
            turn.cancelled = true;
        }
        for pending in live.pending.values_mut() {
            if let Pending::Compact(_, cancelled) = pending {
                *cancelled = true;
            }
        }
        live.pending.insert(command.clone(), Pending::Quiet);
        live.handle.send(Command {
            id: Some(command),
            body: CommandBody::Abort,
        });
    }

    /// Sends a gated tool's question to the client.
    pub(super) fn ask(&mut self, ask: Ask) {
        // A call stopped while its question waited in the queue (its
        // turn was cancelled) needs no answer; neither do the questions
        // of calls stopped since.
        self.waiting.retain(|_, reply| !reply.is_closed());
        if ask.reply.is_closed() {
            return;
        }
        self.next_request += 1;
        let id = self.next_request;
        self.waiting.insert(id, ask.reply);
        (self.out)(rpc::request(id, "session/request_permission", &ask.request));
    }

    /// Handles one output of session `id`'s host.
    pub(super) fn on_output(&mut self, id: &str, output: Output) {
        match output {
            // The turn a session took along when it failed is answered
            // with why.
            Output::Broken(why) => {
                if let Some(turn) = self.sessions.get_mut(id).and_then(|l| l.turn.take()) {
                    self.answer(&turn.request, Err(rpc::internal(why)));
                }
            }
            Output::Response(response) => self.on_response(id, &response),
            Output::Event(event) => {
                let Some(live) = self.sessions.get_mut(id) else {
                    return;
                };
                if let EventBody::MessageEnd {
                    message: WireMessage::Assistant { stop_reason, .. },
                } = &event.body
                    && let Some(turn) = &mut live.turn
                {
                    turn.max_tokens = *stop_reason == Some(etch_protocol::StopReason::Length);
                }
                let updates = live.updates.of(&event.body);
                let ends = match (&event.body, &live.turn) {
                    (EventBody::AgentEnd { error }, Some(turn))
                        if event.id.as_deref() == Some(turn.command.as_str()) =>
                    {
                        Some(error.clone())
                    }
                    _ => None,
                };
                let model_changed = matches!(event.body, EventBody::ModelChanged { .. });
                for update in updates {
                    self.update(id, update);
                }
                if model_changed {
                    let options = self.config_options(id);
                    self.update(
                        id,
                        SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)),
                    );
                }
                if let Some(error) = ends {
                    self.end_turn(id, error);
                }
            }
        }
    }

    /// Answers the turn of session `id`, which ended with `error`.
    pub(super) fn end_turn(&mut self, id: &str, error: Option<String>) {
        let Some(turn) = self.sessions.get_mut(id).and_then(|l| l.turn.take()) else {
            return;
        };
        let stop = if turn.cancelled {
            Ok(StopReason::Cancelled)
        } else {
            match error {
                None if turn.max_tokens => Ok(StopReason::MaxTokens),
                None => Ok(StopReason::EndTurn),
                // The loop's round bound and a blocking UserPromptSubmit
                // hook say so in their (tested) texts.
                Some(e) if e.contains("model/tool rounds") => Ok(StopReason::MaxTurnRequests),
                Some(e) if e.contains("blocked by a UserPromptSubmit hook") => {
                    Ok(StopReason::Refusal)
                }
                Some(e) => Err(rpc::internal(e)),
            }
        };
        self.answer(
            &turn.request,
            stop.and_then(|stop| rpc::to_value(&PromptResponse::new(stop))),
        );
    }

    /// Handles a host response to one of our commands.
    pub(super) fn on_response(&mut self, id: &str, response: &Response) {
        let Some(live) = self.sessions.get_mut(id) else {
            return;
        };
        let Some(pending) = response.id.as_ref().and_then(|c| live.pending.remove(c)) else {
            return;
        };
        let failure = || {
            rpc::internal(
                response
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("{} failed", response.command)),
            )
        };
        match pending {
            Pending::Prompt if !response.success => {
                if let Some(turn) = live.turn.take() {
                    self.answer(&turn.request, Err(failure()));
                }
            }
            Pending::Compact(request, true) => {
                self.answer(
                    &request,
                    rpc::to_value(&PromptResponse::new(StopReason::Cancelled)),
                );
            }
            Pending::Compact(request, false) => {
                if response.success {
                    let said = compacted(response.data.as_ref());
                    self.update(id, SessionUpdate::AgentMessageChunk(chunk(&said)));
                    self.answer(
                        &request,
                        rpc::to_value(&PromptResponse::new(StopReason::EndTurn)),
                    );
                } else {
                    self.answer(&request, Err(failure()));
                }
            }
            Pending::SetModel(request) => {
                if response.success {
                    let options = self.config_options(id);
                    self.answer(
                        &request,
                        rpc::to_value(&SetSessionConfigOptionResponse::new(options)),
                    );
                } else {
                    self.answer(&request, Err(failure()));
                }
            }
            Pending::Prompt | Pending::Quiet => {}
        }
    }
}
