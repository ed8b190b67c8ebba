//! What a run appends to the session log as it goes: the user's prompt,
//! hook runs, tool results, guard records and source diagnostics, each
//! also handed to the observer. Part of the loop ([`super::Agent`]).

#[allow(clippy::wildcard_imports)]
use super::*;

impl RunState<'_> {
    /// Appends one event, hands its line to the observer and returns its id.
    pub(super) fn append<T: Serialize>(
        &mut self,
        kind: &str,
        data: &T,
    ) -> Result<String, RunError> {
        let appended = self.writer.append(kind, data)?;
        self.observer.durable_line(&appended.line);
        Ok(appended.id)
    }

    /// Appends the `hook.run` records of an interceptor's answer and
    /// returns its verdict.
    pub(crate) fn records<T>(&mut self, answer: Intercepted<T>) -> Result<Verdict<T>, RunError> {
        self.hook_runs(&answer.records)?;
        Ok(answer.verdict)
    }

    /// Appends what the tool sources (plugins) reported since the last
    /// look, as `plugin.diagnostic` events.
    pub(super) fn source_diagnostics(&mut self, registry: &ToolRegistry) -> Result<(), RunError> {
        for source in registry.sources() {
            for (plugin, message) in source.diagnostics() {
                self.append(
                    types::PLUGIN_DIAGNOSTIC,
                    &etch_session::PluginDiagnosticData { plugin, message },
                )?;
            }
        }
        Ok(())
    }

    /// Appends `hook.run` records.
    pub(super) fn hook_runs(&mut self, records: &[HookRunData]) -> Result<(), RunError> {
        for data in records {
            self.append(types::HOOK_RUN, data)?;
        }
        Ok(())
    }

    /// Appends what the inbox delivered: its records, then the update
    /// (`process.update`, the text with the run's secrets redacted),
    /// which joins the history as a user message.
    pub(super) fn delivery(
        &mut self,
        delivery: crate::inbox::Delivery,
        redactor: &crate::redact::Redactor,
    ) -> Result<(), RunError> {
        for (kind, data) in &delivery.records {
            self.append(kind, data)?;
        }
        let Some(text) = delivery.text else {
            return Ok(());
        };
        let text = redactor.secrets().redact(&text).into_owned();
        self.append(
            types::PROCESS_UPDATE,
            &serde_json::json!({ "text": text, "processes": delivery.ids }),
        )?;
        self.observer
            .agent_event(&AgentEvent::ProcessUpdate { text: &text });
        self.history.push(Message::user_text(text));
        Ok(())
    }

    /// Appends a user message with images after its text (their bytes
    /// stored first) and emits its start/end events.
    pub(super) fn user_with(
        &mut self,
        text: String,
        images: Vec<etch_model::Image>,
    ) -> Result<(), RunError> {
        let mut content = vec![ContentPart::text(text)];
        content.extend(images.into_iter().map(ContentPart::Image));
        self.writer.store_images(&content)?;
        self.append(
            types::MESSAGE_USER,
            &UserData {
                content: content.clone(),
            },
        )?;
        let message = Message::User { content };
        self.observer.agent_event(&AgentEvent::MessageStart {
            message: Some(&message),
        });
        self.observer.agent_event(&AgentEvent::MessageEnd {
            message: &message,
            stop_reason: None,
        });
        self.history.push(message);
        Ok(())
    }

    /// Appends the `loop.guard` record of what the guard found in the
    /// result of `call`.
    pub(super) fn guard_record(
        &mut self,
        call: &ToolCall,
        finding: &Finding,
    ) -> Result<(), RunError> {
        let repeat = finding.kind == FindingKind::Repeat;
        self.append(
            types::LOOP_GUARD,
            &GuardData {
                kind: finding.kind.as_str().to_owned(),
                action: if finding.stop { "stop" } else { "note" }.to_owned(),
                count: finding.count,
                tool: repeat.then(|| call.name.clone()),
                arguments: repeat.then(|| call.arguments.to_string()),
                tool_call_id: call.id.clone(),
            },
        )?;
        Ok(())
    }

    /// Appends the `loop.grounding` record of a final answer that failed
    /// a grounding check; its note joins the history as user input, as
    /// the projection replays it.
    pub(super) fn grounding_note(&mut self, found: GroundingNote) -> Result<(), RunError> {
        self.append(
            types::LOOP_GROUNDING,
            &GroundingData {
                kind: found.kind.to_owned(),
                paths: found.paths,
                note: found.note.clone(),
            },
        )?;
        self.history.push(Message::user_text(found.note));
        Ok(())
    }

    /// Appends one tool result and emits its start/end events.
    pub(super) fn tool_result(
        &mut self,
        call: &ToolCall,
        result: CallResult,
    ) -> Result<(), RunError> {
        self.hook_runs(&result.hooks)?;
        for (kind, data) in &result.records {
            self.append(kind, data)?;
        }
        let mut content = vec![ContentPart::text(result.text)];
        content.extend(result.images.into_iter().map(ContentPart::Image));
        self.writer.store_images(&content)?;
        self.append(
            types::MESSAGE_TOOL,
            &ToolData {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: content.clone(),
                is_error: result.is_error,
                details: result.details,
            },
        )?;
        let message = Message::Tool {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content,
            is_error: result.is_error,
        };
        self.observer.agent_event(&AgentEvent::MessageStart {
            message: Some(&message),
        });
        self.observer.agent_event(&AgentEvent::MessageEnd {
            message: &message,
            stop_reason: None,
        });
        self.history.push(message);
        Ok(())
    }
}
